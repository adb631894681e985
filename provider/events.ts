/**
 * Events a provider records on a pod (sizes rounded, backend events relayed, restarts), through
 * the node's own recorder (`deps.events`): the same per-pod rate limit and aggregation as the
 * core's events and the kubelet's (client-go tools/record), under the provider's own
 * `source.component`. Best effort: recording never throws and never delays the pod's work.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { ProviderDeps } from "./contract.ts";

/** Records one event on a pod. */
export type PodEventSink = (
  pod: Pod,
  type: "Normal" | "Warning",
  reason: string,
  message: string,
) => void;

/**
 * An event sink on the node's recorder (`deps.events`), as `component`; every event is also
 * logged, and without a recorder (unit tests) only logged.
 *
 * @example Recording that a pod's size was rounded
 * ```ts ignore
 * const event = podEventSink(deps, "vkubelet-mybackend");
 * event(pod, "Normal", "SizeRounded", "1.3 CPU became 2");
 * ```
 */
export function podEventSink(
  deps: Pick<ProviderDeps, "events" | "log">,
  component: string,
): PodEventSink {
  return (pod, type, reason, message) => {
    const { namespace = "", name = "", uid } = pod.metadata ?? {};
    deps.log.info("{pod}: {reason}: {message}", { pod: `${namespace}/${name}`, reason, message });
    if (uid) deps.events?.record(pod, { type, reason, message, component });
  };
}
