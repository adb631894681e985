/**
 * The pod status a kubelet would report for a {@link PodRecord}: phase by the kubelet's
 * `getPhase` (kubernetes/kubernetes pkg/kubelet/kubelet_pods.go), container states with
 * `lastState` and `restartCount`, and the PodReadyToStartContainers, Initialized,
 * ContainersReady and Ready conditions, keeping conditions owned by others (PodScheduled).
 * @module
 */
import type {
  Container,
  ContainerState,
  ContainerStatus,
  Pod,
  PodCondition,
  PodStatus,
} from "kubernetes-types/core/v1.d.ts";
import type { ContainerRecord, PodRecord, Termination } from "./state.ts";

/** RFC 3339 with whole seconds, as `metav1.Time` is written. */
export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/** Extra facts for the status that the record does not hold. */
export interface StatusExtras {
  nowMs: number;
  hostIp: string;
  volumesReady: boolean;
  /** Conditions of the provider's own (e.g. volumes not mounted at their paths). */
  extraConditions?: PodCondition[];
}

function terminated(t: Termination): ContainerState {
  return {
    terminated: {
      exitCode: t.exitCode,
      reason: t.reason,
      ...(t.message ? { message: t.message } : {}),
      startedAt: rfc3339(t.startedAtMs),
      finishedAt: rfc3339(t.finishedAtMs),
      containerID: t.containerId,
    },
  };
}

function containerStatus(c: Container, r: ContainerRecord | undefined): ContainerStatus {
  const image = c.image ?? "";
  const base: ContainerStatus = {
    name: c.name,
    image,
    imageID: `process://${image}`,
    ready: false,
    started: false,
    restartCount: r?.restartCount ?? 0,
    state: { waiting: { reason: "ContainerCreating" } },
    lastState: r?.lastTermination ? terminated(r.lastTermination) : {},
  };
  if (!r) return base;
  if (r.running) {
    return {
      ...base,
      containerID: r.running.containerId,
      ready: r.running.ready,
      started: r.running.started,
      state: { running: { startedAt: rfc3339(r.running.startedAtMs) } },
    };
  }
  if (r.waiting) {
    const waiting = {
      reason: r.waiting.reason,
      ...(r.waiting.message ? { message: r.waiting.message } : {}),
    };
    return { ...base, state: { waiting } };
  }
  if (r.terminated) {
    return { ...base, containerID: r.terminated.containerId, state: terminated(r.terminated) };
  }
  return base;
}

/** The pod phase, as the kubelet's getPhase decides it. */
export function podPhase(record: PodRecord): PodStatus["phase"] {
  const spec = record.pod.spec ?? { containers: [] };
  const policy = spec.restartPolicy ?? "Always";
  for (const c of spec.initContainers ?? []) {
    const t = record.containers[c.name]?.terminated;
    if (c.restartPolicy !== "Always" && policy === "Never" && t && t.exitCode !== 0) {
      return "Failed";
    }
  }
  if (!record.initialized) return "Pending";
  let running = 0, waiting = 0, succeeded = 0, failed = 0;
  for (const c of spec.containers) {
    const r = record.containers[c.name];
    if (r?.running) running++;
    else if (r?.terminated && !(r.waiting && !record.deleting)) {
      if (r.terminated.exitCode === 0) succeeded++;
      else failed++;
    } else if (r?.lastTermination && r.waiting?.reason === "CrashLoopBackOff") {
      if (r.lastTermination.exitCode === 0) succeeded++;
      else failed++;
    } else waiting++;
  }
  if (waiting > 0 && !record.deleting) return "Pending";
  if (running > 0) return "Running";
  if (record.deleting || policy === "Never") return failed > 0 ? "Failed" : "Succeeded";
  if (policy === "Always") return "Running";
  return failed > 0 ? "Running" : "Succeeded";
}

function condition(type: string, ok: boolean, atMs: number, reason?: string): PodCondition {
  return {
    type,
    status: ok ? "True" : "False",
    lastTransitionTime: rfc3339(atMs),
    ...(reason ? { reason } : {}),
  };
}

/** The full status of `record`. */
export function podStatus(record: PodRecord, extras: StatusExtras): PodStatus {
  const pod: Pod = record.pod;
  const spec = pod.spec ?? { containers: [] };
  const phase = podPhase(record);
  const statuses = spec.containers.map((c) => containerStatus(c, record.containers[c.name]));
  const initStatuses = (spec.initContainers ?? []).map((c) => {
    const s = containerStatus(c, record.containers[c.name]);
    const t = record.containers[c.name]?.terminated;
    return t?.exitCode === 0 && !record.containers[c.name]?.running ? { ...s, ready: true } : s;
  });
  const done = phase === "Succeeded" || phase === "Failed";
  const allReady = statuses.length > 0 && statuses.every((s) => s.ready) && !done;
  const at = extras.nowMs;
  const reason = done ? "PodCompleted" : undefined;
  const notReady = allReady ? undefined : reason ?? "ContainersNotReady";
  const ours = [
    condition("PodReadyToStartContainers", extras.volumesReady && !done, at),
    condition(
      "Initialized",
      record.initialized,
      at,
      record.initialized ? reason : "ContainersNotInitialized",
    ),
    condition("ContainersReady", allReady, at, notReady),
    condition("Ready", allReady, at, notReady),
    ...(extras.extraConditions ?? []),
  ];
  const status: PodStatus = {
    phase,
    conditions: mergeConditions(pod.status?.conditions ?? [], ours, at),
    hostIP: extras.hostIp,
    hostIPs: [{ ip: extras.hostIp }],
    podIP: record.podIp,
    podIPs: [{ ip: record.podIp }],
    startTime: rfc3339(record.startTimeMs),
    qosClass: pod.status?.qosClass ?? "BestEffort",
    containerStatuses: statuses,
  };
  if (initStatuses.length > 0) status.initContainerStatuses = initStatuses;
  const ephemeral = (spec.ephemeralContainers ?? []).map((c) => ({
    ...containerStatus(c as Container, record.containers[c.name]),
    ready: false,
  }));
  if (ephemeral.length > 0) status.ephemeralContainerStatuses = ephemeral;
  return status;
}

/** Keeps others' conditions, and each condition's transition time while its status holds. */
function mergeConditions(previous: PodCondition[], ours: PodCondition[], atMs: number) {
  const types = new Set(ours.map((c) => c.type));
  const kept = previous.filter((c) => !types.has(c.type));
  if (!kept.some((c) => c.type === "PodScheduled")) {
    kept.push(condition("PodScheduled", true, atMs));
  }
  const merged = ours.map((c) => {
    const before = previous.find((p) => p.type === c.type);
    return before?.status === c.status && before.lastTransitionTime
      ? { ...c, lastTransitionTime: before.lastTransitionTime }
      : c;
  });
  return [...kept, ...merged];
}
