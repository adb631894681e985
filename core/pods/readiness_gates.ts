/**
 * Readiness gates applied to a provider's own conditions: a provider that writes its status
 * without the kit's builder may ignore `spec.readinessGates`, or have applied them to an older
 * copy of the pod (a gate's condition patched since). The rule itself, and its words, are the
 * kit's (`provider/pod_conditions.ts`, after kubernetes/kubernetes pkg/kubelet/status/generate.go
 * GeneratePodReadyCondition); this only decides when to apply it to a report.
 * @module
 */
import type { PodCondition, PodReadinessGate, PodStatus } from "kubernetes-types/core/v1.d.ts";
import { READINESS_GATES_NOT_READY, unreadyGatesMessage } from "../../provider/pod_conditions.ts";

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
