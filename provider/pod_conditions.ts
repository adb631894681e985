/**
 * The pod conditions a kubelet owns, from the container statuses and the phase, as
 * kubernetes/kubernetes pkg/kubelet/status/generate.go (v1.37) words them:
 * PodReadyToStartContainers, Initialized, Ready (with readiness gates), ContainersReady and
 * PodScheduled. Conditions owned by others are kept, and each condition keeps its transition time
 * while its status holds (pkg/kubelet/status/status_manager.go `updateLastTransitionTime`).
 * @module
 */
import type {
  ContainerStatus,
  Pod,
  PodCondition,
  PodReadinessGate,
} from "kubernetes-types/core/v1.d.ts";
import { isSidecar, isTerminalPhase, type StatusesByName } from "./pod_phase.ts";
import { formatTime } from "../k8s/micro_time.ts";
import { SharedParts } from "../k8s/watch/intern.ts";

/** What the conditions are generated from besides the pod and its container statuses. */
export interface ConditionInputs {
  phase: string;
  /** The pod's sandbox (network, volumes) is set up; false before and after the pod runs. */
  sandboxReady: boolean;
  /** Conditions the readiness gates are looked up in, first match wins. */
  known: PodCondition[];
}

type Untimed = Omit<PodCondition, "lastTransitionTime">;

function condition(type: string, ok: boolean, reason?: string, message?: string): Untimed {
  return {
    type,
    status: ok ? "True" : "False",
    ...(reason ? { reason } : {}),
    ...(message ? { message } : {}),
  };
}

/** Go's `%s` of a string slice: `[a b]`. */
const goList = (names: string[]) => `[${names.join(" ")}]`;

/** True once the init container counts as done: a sidecar started, a regular one succeeded. */
function initDone(sidecar: boolean, s: ContainerStatus): boolean {
  return sidecar ? s.started === true : s.ready;
}

/** A regular container has a running or terminated state: the pod was initialized. */
function regularStarted(pod: Pod, statuses: StatusesByName): boolean {
  return (pod.spec?.containers ?? []).some((c) => {
    const state = statuses.get(c.name)?.state;
    return !!(state?.running || state?.terminated);
  });
}

function initialized(pod: Pod, statuses: StatusesByName, phase: string): Untimed {
  if (phase === "Succeeded") return condition("Initialized", true, "PodCompleted");
  if (regularStarted(pod, statuses)) return condition("Initialized", true);
  const incomplete = (pod.spec?.initContainers ?? []).filter((c) => {
    const s = statuses.get(c.name);
    return !s || !initDone(isSidecar(c), s);
  }).map((c) => c.name);
  if (incomplete.length === 0) return condition("Initialized", true);
  const message = `containers with incomplete status: ${goList(incomplete)}`;
  return condition("Initialized", false, "ContainersNotInitialized", message);
}

function containersReady(pod: Pod, statuses: StatusesByName, phase: string): Untimed {
  if (isTerminalPhase(phase)) {
    return condition("ContainersReady", false, phase === "Failed" ? "PodFailed" : "PodCompleted");
  }
  const longRunning = [
    ...(pod.spec?.initContainers ?? []).filter(isSidecar),
    ...(pod.spec?.containers ?? []),
  ];
  const unready = longRunning.filter((c) => !statuses.get(c.name)?.ready).map((c) => c.name);
  if (unready.length === 0) return condition("ContainersReady", true);
  const message = `containers with unready status: ${goList(unready)}`;
  return condition("ContainersReady", false, "ContainersNotReady", message);
}

/** The Ready condition's reason while a readiness gate's condition is not True (generate.go). */
export const READINESS_GATES_NOT_READY = "ReadinessGatesNotReady";

/**
 * Why the readiness gates keep the pod unready, in generate.go's GeneratePodReadyCondition words
 * (first match of each gate's type in `known`), or undefined when every gate's condition is True.
 */
export function unreadyGatesMessage(
  gates: PodReadinessGate[] | undefined,
  known: PodCondition[],
): string | undefined {
  const unready: string[] = [];
  for (const gate of gates ?? []) {
    const found = known.find((c) => c.type === gate.conditionType);
    const name = JSON.stringify(gate.conditionType);
    if (!found) {
      unready.push(`corresponding condition of pod readiness gate ${name} does not exist.`);
    } else if (found.status !== "True") {
      unready.push(`the status of pod readiness gate ${name} is not "True", but ${found.status}`);
    }
  }
  return unready.length ? unready.join(", ") : undefined;
}

/** Ready: as ContainersReady, then False while a readiness gate's condition is not True. */
function ready(pod: Pod, containers: Untimed, known: PodCondition[]): Untimed {
  if (containers.status !== "True") return { ...containers, type: "Ready" };
  const message = unreadyGatesMessage(pod.spec?.readinessGates, known);
  if (message === undefined) return condition("Ready", true);
  return condition("Ready", false, READINESS_GATES_NOT_READY, message);
}

/**
 * The kubelet-owned conditions, without transition times, in the kubelet's order:
 * PodReadyToStartContainers, Initialized, Ready, ContainersReady, PodScheduled, as
 * kubernetes/kubernetes pkg/kubelet/kubelet_pods.go `generateAPIPodStatus` appends them after the
 * conditions it does not own. The controller's own statuses (a held pod's) come from here too.
 */
export function kubeletConditions(
  pod: Pod,
  statuses: StatusesByName,
  inputs: ConditionInputs,
): Untimed[] {
  const { phase } = inputs;
  const sandbox = inputs.sandboxReady && !isTerminalPhase(phase);
  const containers = containersReady(pod, statuses, phase);
  return [
    sandbox ? condition("PodReadyToStartContainers", true) : condition(
      "PodReadyToStartContainers",
      false,
      "PodSandboxNotReady",
      isTerminalPhase(phase) ? "pod sandbox is not ready" : "no pod sandbox exists",
    ),
    initialized(pod, statuses, phase),
    ready(pod, containers, inputs.known),
    containers,
    condition("PodScheduled", true),
  ];
}

/**
 * `ours` with transition times (kept from `previous` while the status holds, else `nowMs`),
 * after the conditions of `previous` whose type is not among ours (owned by others). Frozen, and
 * shared with other pods' equal lists (pods that started in the same second have the same).
 */
export function mergeConditions(
  previous: PodCondition[],
  ours: Untimed[],
  nowMs: number,
): PodCondition[] {
  const types = new Set(ours.map((c) => c.type));
  const kept = previous.filter((c) => !types.has(c.type));
  const timed = ours.map((c): PodCondition => {
    const before = previous.find((p) => p.type === c.type);
    const at = before?.status === c.status && before.lastTransitionTime
      ? before.lastTransitionTime
      : formatTime(nowMs);
    return { ...c, lastTransitionTime: at };
  });
  return conditionLists.intern([...kept, ...timed]);
}

/** Condition lists of recent seconds, shared between pods (immutable values, like formatTime's). */
const conditionLists = new SharedParts(1024);
