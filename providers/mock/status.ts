/**
 * Pod statuses as a kubelet reports them, for the mock provider: Running with every container
 * ready, and the terminal status after deletion. Field choices follow the kubelet's
 * `generateAPIPodStatus` (kubernetes/kubernetes pkg/kubelet/kubelet_pods.go): conditions
 * PodReadyToStartContainers, Initialized, Ready, ContainersReady, PodScheduled; completed init
 * containers first; sidecars (init containers with restartPolicy Always) keep running.
 * @module
 */
import type {
  Container,
  ContainerStatus,
  Pod,
  PodCondition,
  PodStatus,
} from "kubernetes-types/core/v1.d.ts";
import { quantityToNumber } from "../../k8s/quantity.ts";

/** One start of one container: when, how often it restarted, with which image. */
export interface ContainerRun {
  startedAtMs: number;
  restartCount: number;
  image: string;
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

function condition(type: string, status: "True" | "False", atMs: number, reason?: string) {
  const out: PodCondition = { type, status, lastTransitionTime: rfc3339(atMs) };
  if (reason) out.reason = reason;
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

function runningContainer(pod: Pod, container: Container, run: ContainerRun): ContainerStatus {
  return {
    name: container.name,
    image: run.image,
    imageID: imageId(run.image),
    containerID: containerId(pod, container.name, run.restartCount),
    ready: true,
    started: true,
    restartCount: run.restartCount,
    state: { running: { startedAt: rfc3339(run.startedAtMs) } },
    lastState: {},
  };
}

/** The Running status: init containers completed, every other container running and ready. */
export function runningStatus(pod: Pod, inputs: StatusInputs): PodStatus {
  const { podStartMs, runs } = inputs;
  const initStatuses = (pod.spec?.initContainers ?? []).map((c): ContainerStatus => {
    if (isSidecar(c)) return runningContainer(pod, c, runs.get(c.name)!);
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
  const status: PodStatus = {
    phase: "Running",
    conditions: mergeConditions(pod, [
      condition("PodReadyToStartContainers", "True", at),
      condition("Initialized", "True", at),
      condition("Ready", "True", at),
      condition("ContainersReady", "True", at),
    ], at),
    hostIP: inputs.hostIp,
    hostIPs: [{ ip: inputs.hostIp }],
    podIP: inputs.podIp,
    podIPs: [{ ip: inputs.podIp }],
    startTime: pod.status?.startTime ?? rfc3339(podStartMs),
    qosClass: qosClass(pod),
    containerStatuses: (pod.spec?.containers ?? []).map((c) =>
      runningContainer(pod, c, runs.get(c.name)!)
    ),
  };
  if (initStatuses.length > 0) status.initContainerStatuses = initStatuses;
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

/** The terminal status after deletion: Succeeded, every container terminated with exit 0. */
export function terminatedStatus(pod: Pod, nowMs: number): PodStatus {
  const status = pod.status ?? {};
  const done = (type: string) => condition(type, "False", nowMs, "PodCompleted");
  const out: PodStatus = {
    ...status,
    phase: "Succeeded",
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
  return out;
}
