/**
 * Pod statuses as a kubelet reports them, for the mock provider: every container running and
 * ready unless a test hook made it exit or fail to start, and the terminal status after deletion.
 * Field choices follow the kubelet's `generateAPIPodStatus` and `getPhase` (kubernetes/kubernetes
 * pkg/kubelet/kubelet_pods.go): conditions PodReadyToStartContainers, Initialized, Ready,
 * ContainersReady, PodScheduled; completed init containers first; sidecars (init containers with
 * restartPolicy Always) keep running; the phase from the regular containers' states and the
 * pod's restartPolicy.
 * @module
 */
import type {
  Container,
  ContainerStateTerminated,
  ContainerStatus,
  Pod,
  PodCondition,
  PodStatus,
} from "kubernetes-types/core/v1.d.ts";
import { quantityToNumber } from "../../k8s/quantity.ts";

/** How a container run ended. */
export interface ContainerExit {
  exitCode: number;
  finishedAtMs: number;
}

/** One start of one container: when, how often it restarted, with which image, and its state. */
export interface ContainerRun {
  startedAtMs: number;
  restartCount: number;
  image: string;
  /** This run has ended and will not restart: the container is terminated. */
  exited?: ContainerExit;
  /** The container waits to (re)start: `CrashLoopBackOff`, `CreateContainerError`. */
  waiting?: { reason: string; message: string };
  /** The run before this one: the kubelet's `lastState.terminated`. */
  previous?: ContainerExit & { startedAtMs: number; restartCount: number };
}

/** True while the run is neither terminated nor waiting. */
export function isRunning(run: ContainerRun): boolean {
  return !run.exited && !run.waiting;
}

/** What a status is built from besides the pod itself. */
export interface StatusInputs {
  nowMs: number;
  podStartMs: number;
  podIp: string;
  hostIp: string;
  /** Current run of each container and sidecar, by name. */
  runs: Map<string, ContainerRun>;
}

/** RFC 3339 with whole seconds, as `metav1.Time` is written. */
export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/** A stable hex digest of `text` (FNV-1a, repeated with different seeds), `hexLength` long. */
export function digest(text: string, hexLength = 16): string {
  let out = "";
  for (let seed = 0; out.length < hexLength; seed++) {
    let hash = 0x811c9dc5 ^ seed;
    for (let i = 0; i < text.length; i++) {
      hash ^= text.charCodeAt(i);
      hash = Math.imul(hash, 0x01000193);
    }
    out += (hash >>> 0).toString(16).padStart(8, "0");
  }
  return out.slice(0, hexLength);
}

/** The container ID the mock reports: changes with every restart. */
export function containerId(pod: Pod, container: string, restartCount: number): string {
  const uid = pod.metadata?.uid ?? `${pod.metadata?.namespace}/${pod.metadata?.name}`;
  return `mock://${digest(`${uid}/${container}/${restartCount}`, 32)}`;
}

/** The image ID the mock reports for an image reference. */
export function imageId(image: string): string {
  return `mock://${image}@sha256:${digest(image, 64)}`;
}

/** True for a sidecar: an init container that keeps running (`restartPolicy: Always`). */
export function isSidecar(container: Container): boolean {
  return container.restartPolicy === "Always";
}

/** The containers that run for the pod's whole life: sidecars and regular containers. */
export function longRunningContainers(pod: Pod): Container[] {
  return [...(pod.spec?.initContainers ?? []).filter(isSidecar), ...(pod.spec?.containers ?? [])];
}

/** Guaranteed, Burstable or BestEffort, as kubernetes pkg/apis/core/v1/helper/qos/qos.go decides. */
export function qosClass(pod: Pod): "Guaranteed" | "Burstable" | "BestEffort" {
  const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  let anySet = false;
  let guaranteed = containers.length > 0;
  for (const container of containers) {
    for (const resource of ["cpu", "memory"]) {
      const limit = container.resources?.limits?.[resource];
      const request = container.resources?.requests?.[resource] ?? limit;
      if (limit !== undefined || request !== undefined) anySet = true;
      if (limit === undefined || quantityToNumber(request!) !== quantityToNumber(limit)) {
        guaranteed = false;
      }
    }
  }
  return !anySet ? "BestEffort" : guaranteed ? "Guaranteed" : "Burstable";
}

function condition(
  type: string,
  status: "True" | "False",
  atMs: number,
  reason?: string,
  message?: string,
) {
  const out: PodCondition = { type, status, lastTransitionTime: rfc3339(atMs) };
  if (reason) out.reason = reason;
  if (message) out.message = message;
  return out;
}

/** Keeps conditions owned by others (e.g. the scheduler's PodScheduled) and sets ours. */
function mergeConditions(pod: Pod, ours: PodCondition[], atMs: number): PodCondition[] {
  const types = new Set(ours.map((c) => c.type));
  const previous = pod.status?.conditions ?? [];
  const kept = previous.filter((c) => !types.has(c.type));
  const merged = ours.map((c) => {
    const before = previous.find((p) => p.type === c.type);
    return before?.status === c.status && before.lastTransitionTime
      ? { ...c, lastTransitionTime: before.lastTransitionTime }
      : c;
  });
  if (!kept.some((c) => c.type === "PodScheduled")) {
    kept.push(condition("PodScheduled", "True", atMs));
  }
  return [...kept, ...merged];
}

function terminatedState(
  pod: Pod,
  name: string,
  run: ContainerExit & { startedAtMs: number; restartCount: number },
): ContainerStateTerminated {
  return {
    exitCode: run.exitCode,
    reason: run.exitCode === 0 ? "Completed" : "Error",
    startedAt: rfc3339(run.startedAtMs),
    finishedAt: rfc3339(run.finishedAtMs),
    containerID: containerId(pod, name, run.restartCount),
  };
}

/** The status of a long-running container from its current run. */
function containerStatus(pod: Pod, container: Container, run: ContainerRun): ContainerStatus {
  const out: ContainerStatus = {
    name: container.name,
    image: run.image,
    imageID: imageId(run.image),
    containerID: containerId(pod, container.name, run.restartCount),
    ready: isRunning(run),
    started: isRunning(run),
    restartCount: run.restartCount,
    state: { running: { startedAt: rfc3339(run.startedAtMs) } },
    lastState: run.previous
      ? { terminated: terminatedState(pod, container.name, run.previous) }
      : {},
  };
  if (run.waiting) {
    // No container exists for this run yet: the kubelet reports no containerID while waiting.
    delete out.containerID;
    out.state = { waiting: { ...run.waiting } };
  } else if (run.exited) {
    out.state = { terminated: terminatedState(pod, container.name, { ...run, ...run.exited }) };
  }
  return out;
}

/**
 * The phase from the regular containers, as the kubelet's `getPhase`: Pending while one waits
 * to start for the first time, Running while one runs (or, under restartPolicy Always, all are
 * between restarts), else Succeeded when all exited 0, Failed under Never, Running under
 * OnFailure (a failed container is restarted).
 */
export function podPhase(pod: Pod, runs: Map<string, ContainerRun>): string {
  let waiting = 0, running = 0, stopped = 0, succeeded = 0;
  for (const c of pod.spec?.containers ?? []) {
    const run = runs.get(c.name);
    if (!run || isRunning(run)) running++;
    else if (run.waiting && !run.previous) waiting++;
    else {
      stopped++;
      if (run.exited?.exitCode === 0) succeeded++;
    }
  }
  if (waiting > 0) return "Pending";
  if (running > 0) return "Running";
  const policy = pod.spec?.restartPolicy ?? "Always";
  if (policy === "Always") return "Running";
  if (stopped === succeeded) return "Succeeded";
  return policy === "Never" ? "Failed" : "Running";
}

/** True for Succeeded and Failed. */
export function isTerminalPhase(phase: string | undefined): boolean {
  return phase === "Succeeded" || phase === "Failed";
}

/** Ready and ContainersReady: True, or False with the kubelet's reason and message. */
function readiness(pod: Pod, runs: Map<string, ContainerRun>, phase: string, atMs: number) {
  if (isTerminalPhase(phase)) {
    return ["Ready", "ContainersReady"].map((t) => condition(t, "False", atMs, "PodCompleted"));
  }
  const unready = longRunningContainers(pod).filter((c) => !isRunning(runs.get(c.name)!));
  if (unready.length === 0) {
    return ["Ready", "ContainersReady"].map((t) => condition(t, "True", atMs));
  }
  const message = `containers with unready status: [${unready.map((c) => c.name).join(" ")}]`;
  return ["Ready", "ContainersReady"].map((t) =>
    condition(t, "False", atMs, "ContainersNotReady", message)
  );
}

/** The current status: init containers completed, every other container as its run says. */
export function currentStatus(pod: Pod, inputs: StatusInputs): PodStatus {
  const { podStartMs, runs } = inputs;
  const initStatuses = (pod.spec?.initContainers ?? []).map((c): ContainerStatus => {
    if (isSidecar(c)) return containerStatus(pod, c, runs.get(c.name)!);
    return {
      name: c.name,
      image: c.image ?? "",
      imageID: imageId(c.image ?? ""),
      containerID: containerId(pod, c.name, 0),
      ready: true,
      started: false,
      restartCount: 0,
      state: {
        terminated: {
          exitCode: 0,
          reason: "Completed",
          startedAt: rfc3339(podStartMs),
          finishedAt: rfc3339(podStartMs),
          containerID: containerId(pod, c.name, 0),
        },
      },
      lastState: {},
    };
  });
  const at = inputs.nowMs;
  const phase = podPhase(pod, runs);
  const status: PodStatus = {
    phase,
    conditions: mergeConditions(pod, [
      condition("PodReadyToStartContainers", isTerminalPhase(phase) ? "False" : "True", at),
      condition("Initialized", "True", at),
      ...readiness(pod, runs, phase, at),
    ], at),
    hostIP: inputs.hostIp,
    hostIPs: [{ ip: inputs.hostIp }],
    podIP: inputs.podIp,
    podIPs: [{ ip: inputs.podIp }],
    startTime: pod.status?.startTime ?? rfc3339(podStartMs),
    qosClass: qosClass(pod),
    containerStatuses: (pod.spec?.containers ?? []).map((c) =>
      containerStatus(pod, c, runs.get(c.name)!)
    ),
  };
  if (initStatuses.length > 0) status.initContainerStatuses = initStatuses;
  // Ephemeral containers the mock was asked to run; never ready (the kubelet's ephemeral
  // container statuses carry ready: false).
  const ephemeral = (pod.spec?.ephemeralContainers ?? []).filter((c) => runs.has(c.name))
    .map((c) => ({ ...containerStatus(pod, c, runs.get(c.name)!), ready: false }));
  if (ephemeral.length > 0) status.ephemeralContainerStatuses = ephemeral;
  return status;
}

/** Turns every running container of `status` into terminated (exit 0, Completed). */
function terminate(statuses: ContainerStatus[] | undefined, nowMs: number) {
  return statuses?.map((s): ContainerStatus => {
    if (!s.state?.running) return s;
    const terminated = {
      exitCode: 0,
      reason: "Completed",
      startedAt: s.state.running.startedAt,
      finishedAt: rfc3339(nowMs),
      containerID: s.containerID,
    };
    return { ...s, ready: false, started: false, state: { terminated } };
  });
}

/**
 * The terminal status after deletion: every running container terminated with exit 0, and
 * Succeeded unless the pod had already finished (a Failed pod stays Failed).
 */
export function terminatedStatus(pod: Pod, nowMs: number): PodStatus {
  const status = pod.status ?? {};
  const done = (type: string) => condition(type, "False", nowMs, "PodCompleted");
  const out: PodStatus = {
    ...status,
    phase: isTerminalPhase(status.phase) ? status.phase : "Succeeded",
    conditions: mergeConditions(pod, [
      condition("PodReadyToStartContainers", "False", nowMs),
      condition("Initialized", "True", nowMs, "PodCompleted"),
      done("Ready"),
      done("ContainersReady"),
    ], nowMs),
    containerStatuses: terminate(status.containerStatuses, nowMs),
  };
  if (status.initContainerStatuses) {
    out.initContainerStatuses = terminate(status.initContainerStatuses, nowMs);
  }
  if (status.ephemeralContainerStatuses) {
    out.ephemeralContainerStatuses = terminate(status.ephemeralContainerStatuses, nowMs);
  }
  return out;
}
