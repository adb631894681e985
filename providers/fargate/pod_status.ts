/**
 * A stand-in for the kit's status builder: per-container reports to a PodStatus, with the
 * kubelet's phase rules (kubernetes/kubernetes pkg/kubelet/kubelet_pods.go `getPhase`) and pod
 * conditions (pkg/kubelet/status/generate.go). Called from one place (`./status.ts`), to be
 * replaced by `provider/pod_status.ts` when the kit has it.
 * @module
 */
import type {
  ContainerState,
  ContainerStateTerminated,
  ContainerStatus,
  Pod,
  PodCondition,
  PodStatus,
} from "kubernetes-types/core/v1.d.ts";

/** One container as the backend sees it. */
export interface ContainerReport {
  name: string;
  image?: string;
  containerID?: string;
  state: ContainerState;
  /** The previous instance's end, after a restart. */
  lastTerminated?: ContainerStateTerminated;
  restartCount: number;
  ready: boolean;
}

/** What a provider knows about one pod. */
export interface PodStatusReport {
  containers: ContainerReport[];
  hostIP?: string;
  podIP?: string;
  /** RFC 3339, seconds. */
  startTime?: string;
  /** Whether the pod's network (sandbox) is up. */
  networkReady: boolean;
  /** RFC 3339, seconds; the transition time of conditions that change now. */
  now: string;
  reason?: string;
  message?: string;
  /** The pod is being deleted and will not run again: no restart-policy phase (kubelet 1.27+). */
  terminal?: boolean;
}

function phaseOf(pod: Pod, containers: ContainerReport[], terminal: boolean): PodStatus["phase"] {
  let running = 0, waiting = 0, stopped = 0, succeeded = 0;
  for (const c of containers) {
    if (c.state.running) running++;
    else if (c.state.terminated) {
      stopped++;
      if (c.state.terminated.exitCode === 0) succeeded++;
    } else if (c.lastTerminated) stopped++;
    else waiting++;
  }
  if (waiting > 0) return "Pending";
  if (running > 0) return "Running";
  if (stopped === 0) return "Pending";
  if (terminal) return stopped === succeeded ? "Succeeded" : "Failed";
  const policy = pod.spec?.restartPolicy ?? "Always";
  if (policy === "Always") return "Running";
  if (stopped === succeeded) return "Succeeded";
  if (policy === "OnFailure") return "Running";
  return "Failed";
}

/** Builds the pod's status from `report`, keeping transition times of unchanged conditions. */
export function buildPodStatus(pod: Pod, report: PodStatusReport): PodStatus {
  const phase = phaseOf(pod, report.containers, report.terminal ?? false);
  const terminal = phase === "Succeeded" || phase === "Failed";
  const allReady = report.containers.length > 0 && report.containers.every((c) => c.ready);
  const notReady = report.containers.filter((c) => !c.ready).map((c) => c.name);
  const readyReason = terminal ? "PodCompleted" : allReady ? undefined : "ContainersNotReady";
  const readyMessage = terminal || allReady
    ? undefined
    : `containers with unready status: [${notReady.join(" ")}]`;
  const previous = new Map((pod.status?.conditions ?? []).map((c) => [c.type, c]));
  const condition = (
    type: string,
    ok: boolean,
    reason?: string,
    message?: string,
  ): PodCondition => {
    const status = ok ? "True" : "False";
    const before = previous.get(type);
    const lastTransitionTime = before?.status === status ? before.lastTransitionTime : report.now;
    return { type, status, lastTransitionTime, reason, message };
  };
  const containerStatuses: ContainerStatus[] = report.containers.map((c) => ({
    name: c.name,
    image: c.image ?? "",
    imageID: "",
    containerID: c.containerID,
    ready: c.ready,
    started: c.state.running !== undefined,
    restartCount: c.restartCount,
    state: c.state,
    lastState: c.lastTerminated ? { terminated: c.lastTerminated } : {},
  }));
  const status: PodStatus = {
    phase,
    reason: report.reason,
    message: report.message,
    conditions: [
      condition("PodReadyToStartContainers", report.networkReady && !terminal),
      condition("Initialized", true),
      condition("Ready", allReady && !terminal, readyReason, readyMessage),
      condition("ContainersReady", allReady && !terminal, readyReason, readyMessage),
      condition("PodScheduled", true),
    ],
    hostIP: report.hostIP,
    hostIPs: report.hostIP ? [{ ip: report.hostIP }] : undefined,
    podIP: report.podIP,
    podIPs: report.podIP ? [{ ip: report.podIP }] : undefined,
    startTime: report.startTime,
    containerStatuses,
    qosClass: pod.status?.qosClass,
  };
  for (const [key, value] of Object.entries(status)) {
    if (value === undefined) delete (status as Record<string, unknown>)[key];
  }
  for (const c of status.conditions ?? []) {
    if (c.reason === undefined) delete c.reason;
    if (c.message === undefined) delete c.message;
  }
  return status;
}
