/**
 * A container group's instance view (current and previous state, restart count, per container)
 * as one report per container, for the kit's RemotePods, which adds the restarts of the groups
 * before this one (a group made again after it was deleted behind vkubelet's back) and builds
 * the kubelet's PodStatus. ACI restarts containers itself by the group's restart policy, so its
 * restart counts are used as they are.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type {
  ContainerReport,
  ContainerStateReport,
  RemoteRun,
  TerminatedReport,
} from "../../provider/mod.ts";
import type { ContainerGroup } from "./azure.ts";

type InstanceState = {
  state?: string;
  startTime?: Date;
  exitCode?: number;
  finishTime?: Date;
  detailStatus?: string;
};

/** The container's ID as vkubelet reports it: `aci://<group>/<container>`. */
export function containerId(groupName: string, name: string): string {
  return `aci://${groupName}/${name}`;
}

function containerOf(group: ContainerGroup | undefined, name: string) {
  return group?.containers.find((c) => c.name === name) ??
    group?.initContainers?.find((c) => c.name === name);
}

/** A CamelCase reason from ACI's detail status (`CrashLoopBackOff: ...` → `CrashLoopBackOff`). */
function reasonOf(detail: string | undefined, fallback: string): string {
  const head = detail?.split(/[:\s]/)[0] ?? "";
  return /^[A-Z][A-Za-z]+$/.test(head) ? head : fallback;
}

/** An ACI `Terminated` state as a kit report. */
export function terminatedReport(
  s: InstanceState,
  groupName: string,
  name: string,
  nowMs: number,
): TerminatedReport {
  const exitCode = s.exitCode ?? 0;
  return {
    exitCode,
    reason: reasonOf(s.detailStatus, exitCode === 0 ? "Completed" : "Error"),
    message: s.detailStatus && reasonOf(s.detailStatus, "") === "" ? s.detailStatus : undefined,
    startedAtMs: s.startTime?.getTime(),
    finishedAtMs: s.finishTime?.getTime() ?? nowMs,
    containerID: containerId(groupName, name),
  };
}

/** What the group's container `name` does now; `sinceMs` stands in for a start ACI leaves out. */
function stateOf(
  group: ContainerGroup,
  name: string,
  times: { sinceMs: number; nowMs: number },
): ContainerStateReport {
  const groupName = group.name ?? "";
  const current = containerOf(group, name)?.instanceView?.currentState as
    | InstanceState
    | undefined;
  if (current?.state === "Running") {
    return { running: { startedAtMs: current.startTime?.getTime() ?? times.sinceMs } };
  }
  if (current?.state === "Terminated") {
    return { terminated: terminatedReport(current, groupName, name, times.nowMs) };
  }
  const failed = group.provisioningState === "Failed";
  return {
    waiting: {
      reason: reasonOf(current?.detailStatus, failed ? "ProvisioningFailed" : "ContainerCreating"),
      message: current?.detailStatus ??
        (group.provisioningState
          ? `container group ${groupName} is ${group.provisioningState}`
          : undefined),
    },
  };
}

/** The group as a run of `pod`: one report per container, init containers apart. */
export function runOfGroup(
  pod: Pod,
  group: ContainerGroup,
  times: { sinceMs: number; nowMs: number },
): RemoteRun<ContainerGroup> {
  const groupName = group.name ?? "";
  const report = (name: string): ContainerReport => {
    const view = containerOf(group, name)?.instanceView;
    const previous = view?.previousState as InstanceState | undefined;
    const state = stateOf(group, name, times);
    return {
      state,
      lastTerminated: previous?.state === "Terminated"
        ? terminatedReport(previous, groupName, name, times.nowMs)
        : undefined,
      restartCount: view?.restartCount ?? 0,
      containerID: "waiting" in state ? undefined : containerId(groupName, name),
    };
  };
  const reports = (specs: { name: string }[] | undefined) =>
    Object.fromEntries((specs ?? []).map((c) => [c.name, report(c.name)]));
  return {
    pod,
    handle: group,
    containers: reports(pod.spec?.containers),
    initContainers: reports(pod.spec?.initContainers),
    podIP: group.ipAddress?.ip,
  };
}

/**
 * How each container ends when vkubelet deletes its group: as ACI last showed it if it had
 * ended, else `Error` with exit code 137, as for a killed container.
 */
export function endsOnDelete(
  pod: Pod,
  group: ContainerGroup,
  why: string,
  nowMs: number,
): Record<string, TerminatedReport> {
  const groupName = group.name ?? "";
  const names = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  return Object.fromEntries(names.map(({ name }): [string, TerminatedReport] => {
    const current = containerOf(group, name)?.instanceView?.currentState as
      | InstanceState
      | undefined;
    if (current?.state === "Terminated") {
      return [name, terminatedReport(current, groupName, name, nowMs)];
    }
    return [name, {
      exitCode: 137,
      reason: "Error",
      message: why,
      startedAtMs: current?.startTime?.getTime(),
      finishedAtMs: nowMs,
      containerID: containerId(groupName, name),
    }];
  }));
}
