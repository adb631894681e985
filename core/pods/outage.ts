/**
 * The pod side of a provider outage (the node side is core/node/outage.ts): while the provider
 * cannot reach its backend, each pod keeps the status it last had, marked with a
 * `ProviderReachable=False` condition saying since when it was not refreshed; nothing is created
 * again or deleted on the strength of a list taken during the outage. When the backend answers
 * again, every status is refreshed from the provider first, and only then does the resync compare
 * and sweep. A pod that was running when the outage began and that the provider no longer has
 * afterwards was lost by the backend: it follows its restart policy, as the kubelet treats a
 * container it can no longer find (kubernetes/kubernetes pkg/kubelet/kubelet_pods.go,
 * `ContainerStatusUnknown`, exit code 137), instead of being created again without a word.
 * @module
 */
import type { Pod, PodCondition, PodStatus } from "kubernetes-types/core/v1.d.ts";
import { formatTime } from "../../provider/mod.ts";
import type { PodContext } from "./pod_context.ts";

/** The pod condition that says whether the status was refreshed from the backend. */
export const POD_REACHABLE_CONDITION = "ProviderReachable";

/** The provider's reachability as the node side's health monitor sees it (a `HealthSource`). */
export interface ProviderReachability {
  current(): { healthy: boolean; since: number; message?: string };
  /** Calls `listener` after each change; returns an unsubscribe. */
  onChange(listener: (health: { healthy: boolean }) => void): () => void;
}

/** True while the provider says it cannot reach its backend. */
export function unreachable(ctx: Pick<PodContext, "reachability">): boolean {
  return ctx.reachability !== undefined && !ctx.reachability.current().healthy;
}

/**
 * `status` marked for the outage: `ProviderReachable=False` while it lasts; `True` afterwards on
 * a pod that `current` shows marked. Otherwise `status` itself, so most writes see no change.
 */
export function markReachability(
  ctx: Pick<PodContext, "reachability" | "clock">,
  status: PodStatus,
  current: PodStatus | undefined,
): PodStatus {
  const health = ctx.reachability?.current();
  if (!health) return status;
  const marked = current?.conditions?.find((c) => c.type === POD_REACHABLE_CONDITION);
  let condition: PodCondition;
  if (!health.healthy) {
    const since = formatTime(health.since);
    const previous = marked?.status === "False" ? marked.lastTransitionTime : undefined;
    condition = {
      type: POD_REACHABLE_CONDITION,
      status: "False",
      reason: "ProviderUnreachable",
      // Not the provider's message, which may change from ping to ping: each change would be a
      // write of every pod. The node's ProviderReachable condition carries it.
      message: `status not refreshed since ${since}: the provider cannot reach its backend ` +
        "(the node's ProviderReachable condition says why)",
      lastTransitionTime: previous ?? since,
    };
  } else if (marked?.status === "False") {
    condition = {
      type: POD_REACHABLE_CONDITION,
      status: "True",
      reason: "ProviderReachable",
      message: `status refreshed from the backend at ${formatTime(ctx.clock.now())}`,
      lastTransitionTime: formatTime(ctx.clock.now()),
    };
  } else return status;
  const others = (status.conditions ?? []).filter((c) => c.type !== POD_REACHABLE_CONDITION);
  return { ...status, conditions: [...others, condition] };
}

/** True for a pod that was running when an outage began (it carries the outage's mark). */
export function wasRunningInOutage(pod: Pod): boolean {
  return pod.status?.conditions?.some((c) =>
        c.type === POD_REACHABLE_CONDITION && c.status === "False"
      ) === true &&
    (pod.status?.containerStatuses ?? []).some((c) => c.state?.running || c.started);
}
