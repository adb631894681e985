/**
 * The status builder of the provider kit: a provider reports what each container is doing
 * (waiting, running or terminated, restarts, readiness) and gets the `PodStatus` a kubelet would
 * write, as kubernetes/kubernetes pkg/kubelet/kubelet_pods.go `generateAPIPodStatus` makes it:
 * container statuses in spec order (`convertToAPIContainerStatuses`), the phase by restart policy
 * (./pod_phase.ts), the kubelet's conditions with readiness gates (./pod_conditions.ts), start
 * time and QoS class. {@link terminalPodStatus} is the status after deletion.
 * @module
 */
import type {
  Container,
  ContainerState,
  ContainerStateTerminated,
  ContainerStatus,
  Pod,
  PodCondition,
  PodStatus,
} from "kubernetes-types/core/v1.d.ts";
import { formatTime } from "../k8s/micro_time.ts";
import { kubeletConditions, mergeConditions } from "./pod_conditions.ts";
import { isSidecar, isTerminalPhase, podPhase } from "./pod_phase.ts";
import { qosClass } from "./qos.ts";

/** How a container run ended. `reason` defaults to `Completed` for exit 0, else `Error`. */
export interface TerminatedReport {
  /** The process's exit code. */
  exitCode: number;
  /** Why it ended; default by exit code. */
  reason?: string;
  /** A message of the backend's, shown as is. */
  message?: string;
  /** The signal that ended it, if one did. */
  signal?: number;
  /** When the run started (clock ms). */
  startedAtMs?: number;
  /** When the run ended (clock ms). */
  finishedAtMs: number;
  /** The ID of the run that ended; defaults to the report's `containerID`. */
  containerID?: string;
}

/** What a container is doing now. */
export type ContainerStateReport =
  | { waiting: { reason: string; message?: string } }
  | { running: { startedAtMs: number } }
  | { terminated: TerminatedReport };

/** One container as the provider sees it; the builder turns it into a `ContainerStatus`. */
export interface ContainerReport {
  /** What the container does now. */
  state: ContainerStateReport;
  /** The run before this one (`lastState.terminated`): set once the container restarted. */
  lastTerminated?: TerminatedReport;
  /** Restarts so far; default 0. */
  restartCount?: number;
  /** Readiness probe passed; default true while running (a container without a probe). */
  ready?: boolean;
  /** Startup probe passed; default true while running. */
  started?: boolean;
  /** Reported while running or terminated, never while waiting (no container exists then). */
  containerID?: string;
  /** The image the container runs; default the spec's. */
  image?: string;
  /** The image's digest reference; default none. */
  imageID?: string;
}

/** Everything the builder needs besides the pod's spec. */
export interface PodStatusReport {
  /** Regular containers by name; one missing has not been created yet. */
  containers: Record<string, ContainerReport>;
  /** Init containers (sidecars included) by name; one missing has not been created yet. */
  initContainers?: Record<string, ContainerReport>;
  /**
   * Ephemeral containers (`kubectl debug`) by name; only those reported get a status, never
   * ready, and they count for neither phase nor conditions (kubelet_pods.go).
   */
  ephemeralContainers?: Record<string, ContainerReport>;
  /** Now (clock ms): transition times, and the start time by default. */
  nowMs: number;
  /** When the provider accepted the pod; kept once written. Default `nowMs`. */
  startTimeMs?: number;
  /** The pod's IP. */
  podIP?: string;
  /** Default `[podIP]`. */
  podIPs?: string[];
  /** The IP of the host the pod runs on. */
  hostIP?: string;
  /** Default `[hostIP]`. */
  hostIPs?: string[];
  /** The pod's current status: keeps others' conditions and transition times. Default `pod.status`. */
  previous?: PodStatus;
  /** The pod-level reason and message (e.g. `Evicted`). */
  reason?: string;
  /** The pod-level message (with `reason`). */
  message?: string;
  /** Conditions of the provider's own (types of its own, not the kubelet's). */
  extraConditions?: PodCondition[];
  /** The pod's sandbox (network, volumes) is ready for containers; default true. */
  sandboxReady?: boolean;
  /** No container runs again (deletion): when none runs, the phase is Succeeded or Failed. */
  terminal?: boolean;
}

function terminatedState(t: TerminatedReport, containerID?: string): ContainerStateTerminated {
  const id = t.containerID ?? containerID;
  return {
    exitCode: t.exitCode,
    ...(t.signal !== undefined ? { signal: t.signal } : {}),
    reason: t.reason ?? (t.exitCode === 0 ? "Completed" : "Error"),
    ...(t.message ? { message: t.message } : {}),
    ...(t.startedAtMs !== undefined ? { startedAt: formatTime(t.startedAtMs) } : {}),
    finishedAt: formatTime(t.finishedAtMs),
    ...(id ? { containerID: id } : {}),
  };
}

function apiState(state: ContainerStateReport, containerID?: string): ContainerState {
  if ("running" in state) return { running: { startedAt: formatTime(state.running.startedAtMs) } };
  if ("terminated" in state) return { terminated: terminatedState(state.terminated, containerID) };
  const { reason, message } = state.waiting;
  return { waiting: { reason, ...(message ? { message } : {}) } };
}

/**
 * The kubelet's status of one container. Without a report the container waits in
 * `ContainerCreating`, or `PodInitializing` in a pod with init containers (kubelet_pods.go).
 */
function containerStatus(pod: Pod, c: Container, r: ContainerReport | undefined, init: boolean) {
  const waitingReason = pod.spec?.initContainers?.length ? "PodInitializing" : "ContainerCreating";
  const state: ContainerStateReport = r?.state ?? { waiting: { reason: waitingReason } };
  const out: ContainerStatus = {
    name: c.name,
    image: r?.image ?? c.image ?? "",
    imageID: r?.imageID ?? "",
    ready: false,
    started: false,
    restartCount: r?.restartCount ?? 0,
    state: apiState(state, r?.containerID),
    lastState: r?.lastTerminated ? { terminated: terminatedState(r.lastTerminated) } : {},
  };
  if (init && !isSidecar(c)) {
    // An init container is ready once it completed: the pod may go on (kubelet_pods.go).
    out.ready = "terminated" in state && state.terminated.exitCode === 0;
    out.started = "running" in state;
  } else if ("running" in state) {
    out.ready = r?.ready ?? true;
    out.started = r?.started ?? true;
  }
  const id = "terminated" in state
    ? state.terminated.containerID ?? r?.containerID
    : r?.containerID;
  if (id && !("waiting" in state)) out.containerID = id;
  return out;
}

/** The conditions of `previous` first, then those only `pod.status` has. */
function knownConditions(pod: Pod, previous: PodStatus | undefined): PodCondition[] {
  const mine = previous?.conditions ?? [];
  const types = new Set(mine.map((c) => c.type));
  return [...mine, ...(pod.status?.conditions ?? []).filter((c) => !types.has(c.type))];
}

/** Phase, conditions and container statuses from the container statuses; see the module doc. */
function assemble(
  pod: Pod,
  regular: ContainerStatus[],
  init: ContainerStatus[],
  options: {
    nowMs: number;
    previous?: PodStatus;
    terminal: boolean;
    sandboxReady: boolean;
    extra: PodCondition[];
  },
): PodStatus {
  const byName = new Map([...init, ...regular].map((s) => [s.name, s]));
  const initialized = regular.some((s) =>
    s.state?.running || s.state?.terminated || s.lastState?.terminated
  );
  let phase = podPhase(pod, byName, { terminal: options.terminal, initialized });
  // A pod never leaves a terminal phase (generateAPIPodStatus), and a deleted pod whose
  // containers all stopped ends Failed unless it succeeded (status_manager.go TerminatePod).
  const before = [options.previous?.phase, pod.status?.phase].find(isTerminalPhase);
  if (before) phase = before;
  const running = [...byName.values()].some((s) => s.state?.running);
  if (options.terminal && !running && !isTerminalPhase(phase)) phase = "Failed";
  const known = knownConditions(pod, options.previous);
  const ours = [
    ...kubeletConditions(pod, byName, {
      phase,
      sandboxReady: options.sandboxReady,
      known: [...options.extra, ...known],
    }),
    ...options.extra,
  ];
  const status: PodStatus = {
    phase,
    conditions: mergeConditions(known, ours, options.nowMs),
    containerStatuses: regular,
  };
  if (pod.spec?.initContainers?.length) status.initContainerStatuses = init;
  return status;
}

/**
 * The kubelet's `PodStatus` for `pod` from the provider's report; see the module doc.
 *
 * @example Usage
 * ```ts
 * import { buildPodStatus } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * const pod = { metadata: { name: "web-0" }, spec: { containers: [{ name: "main", image: "nginx" }] } };
 * const status = buildPodStatus(pod, {
 *   containers: { main: { state: { running: { startedAtMs: Date.parse("2026-12-01T10:00:00Z") } } } },
 *   nowMs: Date.parse("2026-12-01T10:00:01Z"),
 *   podIP: "10.1.0.7",
 * });
 * assert.equal(status.phase, "Running");
 * assert.deepEqual(status.conditions?.map((c) => c.type), [
 *   "PodReadyToStartContainers",
 *   "Initialized",
 *   "Ready",
 *   "ContainersReady",
 *   "PodScheduled",
 * ]);
 * ```
 */
export function buildPodStatus(pod: Pod, report: PodStatusReport): PodStatus {
  const spec = pod.spec ?? { containers: [] };
  const previous = report.previous ?? pod.status;
  const regular = spec.containers.map((c) =>
    containerStatus(pod, c, report.containers[c.name], false)
  );
  const init = (spec.initContainers ?? []).map((c) =>
    containerStatus(pod, c, report.initContainers?.[c.name], true)
  );
  const assembled = assemble(pod, regular, init, {
    nowMs: report.nowMs,
    previous,
    terminal: report.terminal ?? false,
    sandboxReady: report.sandboxReady ?? true,
    extra: report.extraConditions ?? [],
  });
  const { containerStatuses, initContainerStatuses, ...head } = assembled;
  const status: PodStatus = { ...head };
  if (report.reason) status.reason = report.reason;
  if (report.message) status.message = report.message;
  if (report.hostIP) {
    status.hostIP = report.hostIP;
    status.hostIPs = (report.hostIPs ?? [report.hostIP]).map((ip) => ({ ip }));
  }
  if (report.podIP) {
    status.podIP = report.podIP;
    status.podIPs = (report.podIPs ?? [report.podIP]).map((ip) => ({ ip }));
  }
  status.startTime = previous?.startTime ?? pod.status?.startTime ??
    formatTime(report.startTimeMs ?? report.nowMs);
  status.qosClass = pod.status?.qosClass ?? previous?.qosClass ?? qosClass(pod);
  status.containerStatuses = containerStatuses;
  if (initContainerStatuses) status.initContainerStatuses = initContainerStatuses;
  const ephemeral = (spec.ephemeralContainers ?? [])
    .filter((c) => report.ephemeralContainers?.[c.name])
    .map((c) => ({
      ...containerStatus(pod, c as Container, report.ephemeralContainers![c.name], false),
      ready: false,
    }));
  if (ephemeral.length > 0) status.ephemeralContainerStatuses = ephemeral;
  return status;
}

/** What {@link terminalPodStatus} needs besides the pod. */
export interface TerminalStatusOptions {
  /** Now (clock ms): when the running containers ended. */
  nowMs: number;
  /** The exit code of every container still running; default 0 (it stopped on SIGTERM). */
  exitCode?: number;
}

/**
 * The status after deletion, from the current one: every running container terminated (ended
 * now with `exitCode`), the phase Succeeded when every regular container exited 0, else Failed
 * (a pod already Succeeded or Failed stays so), and the conditions of a finished pod.
 *
 * @example Usage
 * ```ts
 * import { buildPodStatus, terminalPodStatus } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * const pod = { metadata: { name: "web-0" }, spec: { containers: [{ name: "main", image: "nginx" }] } };
 * const running = buildPodStatus(pod, {
 *   containers: { main: { state: { running: { startedAtMs: 0 } } } },
 *   nowMs: 1_000,
 * });
 * const stopped = terminalPodStatus(pod, running, { nowMs: 2_000 });
 * assert.equal(stopped.phase, "Succeeded");
 * assert.equal(stopped.containerStatuses?.[0].state?.terminated?.exitCode, 0);
 * ```
 */
export function terminalPodStatus(
  pod: Pod,
  current: PodStatus | undefined,
  options: TerminalStatusOptions,
): PodStatus {
  const status = current ?? pod.status ?? {};
  const exitCode = options.exitCode ?? 0;
  const stop = (s: ContainerStatus): ContainerStatus => {
    if (!s.state?.running) return s;
    const terminated = terminatedState({
      exitCode,
      finishedAtMs: options.nowMs,
      containerID: s.containerID,
    });
    // The start time as written, rather than parsed back.
    const { startedAt } = s.state.running;
    const state = { terminated: { ...terminated, ...(startedAt ? { startedAt } : {}) } };
    return { ...s, ready: false, started: false, state };
  };
  const regular = (status.containerStatuses ?? []).map(stop);
  const init = (status.initContainerStatuses ?? []).map(stop);
  const assembled = assemble(pod, regular, init, {
    nowMs: options.nowMs,
    previous: status,
    terminal: true,
    sandboxReady: false,
    extra: [],
  });
  const out: PodStatus = { ...status, ...assembled };
  if (!status.initContainerStatuses) delete out.initContainerStatuses;
  if (status.ephemeralContainerStatuses) {
    out.ephemeralContainerStatuses = status.ephemeralContainerStatuses.map(stop);
  }
  return out;
}
