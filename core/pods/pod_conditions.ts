/**
 * The pod conditions the core itself decides, as the kubelet words them
 * (`pkg/kubelet/status/generate.go` in kubernetes/kubernetes): Ready held False by readiness gates
 * whatever the provider reports, and the full set of conditions for a pod the controller holds
 * back itself (config error, provider failure).
 * @module
 */
import type { Pod, PodCondition, PodReadinessGate, PodStatus } from "kubernetes-types/core/v1.d.ts";

/** The Ready condition's reason while a readiness gate is not True (generate.go). */
export const READINESS_GATES_NOT_READY = "ReadinessGatesNotReady";

/**
 * Why the gates keep the pod unready, in the kubelet's words (GeneratePodReadyCondition), or
 * undefined when every gate's condition is True.
 */
export function unreadyGatesMessage(
  gates: PodReadinessGate[],
  conditions: PodCondition[],
): string | undefined {
  const messages: string[] = [];
  for (const { conditionType: type } of gates) {
    const c = conditions.find((c) => c.type === type);
    if (!c) {
      messages.push(`corresponding condition of pod readiness gate "${type}" does not exist.`);
    } else if (c.status !== "True") {
      messages.push(`the status of pod readiness gate "${type}" is not "True", but ${c.status}`);
    }
  }
  return messages.length ? messages.join(", ") : undefined;
}

/**
 * `conditions` with Ready as the kubelet computes it for a pod with readiness gates: False with
 * ReadinessGatesNotReady while a gate is not True, True once all are and the containers are
 * ready. Only the gates' part is decided here: while the containers are not ready (ContainersReady
 * not True) the provider's Ready stands. A provider that ignores the gates is corrected; one that
 * applied them to older conditions (a gate patched since) is brought up to date.
 */
export function gatedConditions(
  gates: PodReadinessGate[] | undefined,
  conditions: PodCondition[],
  containerStatuses: PodStatus["containerStatuses"],
): PodCondition[] {
  if (!gates?.length) return conditions;
  const ready = conditions.find((c) => c.type === "Ready");
  if (!containersReady(conditions, ready, containerStatuses)) return conditions;
  const message = unreadyGatesMessage(gates, conditions);
  const next: PodCondition = message
    ? { type: "Ready", status: "False", reason: READINESS_GATES_NOT_READY, message }
    : { type: "Ready", status: "True" };
  if (
    ready && ready.status === next.status && ready.reason === next.reason &&
    ready.message === next.message
  ) return conditions;
  if (!ready) return [...conditions, next];
  return conditions.map((c) => c === ready ? { ...next, lastProbeTime: ready.lastProbeTime } : c);
}

// ContainersReady when the provider writes it; else its Ready, unless that Ready is its own
// verdict on the gates, in which case the containers' ready flags tell.
function containersReady(
  conditions: PodCondition[],
  ready: PodCondition | undefined,
  statuses: PodStatus["containerStatuses"],
): boolean {
  const written = conditions.find((c) => c.type === "ContainersReady");
  if (written) return written.status === "True";
  if (ready && ready.reason !== READINESS_GATES_NOT_READY) return ready.status === "True";
  return (statuses ?? []).length > 0 && statuses!.every((s) => s.ready);
}

/**
 * The five conditions the kubelet always writes, for a pod the controller holds back itself:
 * PodScheduled as the scheduler wrote it, PodReadyToStartContainers (True only when a container
 * waits for a reason of its own, like CreateContainerConfigError: the kubelet had its sandbox),
 * Initialized, ContainersReady and Ready (False: nothing runs). Follows generate.go's
 * Generate{ContainersReady,PodReady,PodInitialized}Condition for a pod whose containers all wait.
 */
export function heldPodConditions(
  pod: Pod,
  phase: "Pending" | "Failed",
  waitingReason: string | undefined,
): PodCondition[] {
  const sandboxReady = phase === "Pending" && !!waitingReason &&
    waitingReason !== "ContainerCreating";
  const inits = pod.spec?.initContainers ?? [];
  const names = (pod.spec?.containers ?? []).map((c) => c.name);
  const sidecars = (pod.spec?.initContainers ?? []).filter((c) => c.restartPolicy === "Always");
  const unready = [...sidecars.map((c) => c.name), ...names];
  const notReady: PodCondition = phase === "Failed"
    ? { type: "ContainersReady", status: "False", reason: "PodFailed" }
    : {
      type: "ContainersReady",
      status: "False",
      reason: "ContainersNotReady",
      message: `containers with unready status: [${unready.join(" ")}]`,
    };
  const initialized: PodCondition = inits.length === 0 ? { type: "Initialized", status: "True" } : {
    type: "Initialized",
    status: "False",
    reason: "ContainersNotInitialized",
    message: `containers with incomplete status: [${inits.map((c) => c.name).join(" ")}]`,
  };
  const scheduled = pod.status?.conditions?.find((c) => c.type === "PodScheduled") ??
    { type: "PodScheduled", status: "True" };
  return [
    scheduled,
    { type: "PodReadyToStartContainers", status: sandboxReady ? "True" : "False" },
    initialized,
    notReady,
    { ...notReady, type: "Ready" },
  ];
}
