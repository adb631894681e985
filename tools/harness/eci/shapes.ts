/**
 * What the ECI emulator keeps of a group and how it answers for it: the shapes of Alibaba's API
 * reference (DescribeContainerGroups' `ContainerGroups[]`), list indexes of flattened RPC
 * parameters, and RFC 3339 times with nanoseconds as ECI's logs carry them.
 * @module
 */

/** One container group as the emulator keeps it. */
export interface EmulatedGroup {
  id: string;
  name: string;
  /** Flattened create parameters (`Container.1.Image` → value). */
  params: Map<string, string>;
  status: string;
  ip: string;
  createdMs: number;
  tags: { Key: string; Value: string }[];
  containers: { name: string; image: string; script: string }[];
  initContainers: string[];
  restartPolicy: string;
}

/** The 1-based indexes present for a list parameter (`Container.1...`, `Container.2...`). */
export function indexes(q: URLSearchParams, list: string): number[] {
  const found = new Set<number>();
  const re = new RegExp(`^${list.replaceAll(".", "\\.")}\\.(\\d+)(\\.|$)`);
  for (const key of q.keys()) {
    const m = re.exec(key);
    if (m) found.add(Number(m[1]));
  }
  return [...found].sort((a, b) => a - b);
}

export function nanoTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000000Z");
}

/** The group as DescribeContainerGroups answers it (Alibaba's API reference's field names). */
export function groupBody(g: EmulatedGroup) {
  const started = new Date(g.createdMs).toISOString();
  return {
    ContainerGroupId: g.id,
    ContainerGroupName: g.name,
    RegionId: "cn-hangzhou",
    ZoneId: "cn-hangzhou-h",
    Status: g.status,
    IntranetIp: g.ip,
    CreationTime: started,
    RestartPolicy: g.restartPolicy,
    Cpu: Number(g.params.get("Cpu") ?? 0),
    Memory: Number(g.params.get("Memory") ?? 0),
    VSwitchId: g.params.get("VSwitchId"),
    SecurityGroupId: g.params.get("SecurityGroupId"),
    Tags: g.tags,
    Events: [],
    InitContainers: g.initContainers.map((name) => ({
      Name: name,
      Ready: false,
      RestartCount: 0,
      CurrentState: {
        State: "Terminated",
        ExitCode: 0,
        Reason: "Completed",
        StartTime: started,
        FinishTime: started,
      },
    })),
    Containers: g.containers.map((c) => ({
      Name: c.name,
      Image: c.image,
      Ready: g.status === "Running",
      RestartCount: 0,
      CurrentState: g.status === "Running"
        ? { State: "Running", StartTime: started, DetailStatus: "" }
        : {
          State: "Terminated",
          ExitCode: 0,
          Reason: "Completed",
          StartTime: started,
          FinishTime: new Date().toISOString(),
        },
      PreviousState: { State: "" },
    })),
  };
}
