/**
 * Events a provider records on a pod (sizes rounded, backend events relayed, restarts), written
 * with vkubelet's own API client under the provider's own `source.component`. Best effort:
 * recording never throws and never delays the pod's work.
 * @module
 */
import type { Event, Pod } from "kubernetes-types/core/v1.d.ts";
import type { ProviderDeps } from "./contract.ts";

/** Records one event on a pod. */
export type PodEventSink = (
  pod: Pod,
  type: "Normal" | "Warning",
  reason: string,
  message: string,
) => void;

/**
 * An event sink on the typed client's events API (`deps.kube.events`), as `component`; without
 * one (unit tests) events are only logged.
 *
 * @example Recording that a pod's size was rounded
 * ```ts ignore
 * const event = podEventSink(deps, "vkubelet-mybackend");
 * event(pod, "Normal", "SizeRounded", "1.3 CPU became 2");
 * ```
 */
export function podEventSink(
  deps: Pick<ProviderDeps, "kube" | "nodeName" | "log" | "clock">,
  component: string,
): PodEventSink {
  const events = deps.kube?.events;
  let serial = 0;
  return (pod, type, reason, message) => {
    const { namespace = "", name = "", uid } = pod.metadata ?? {};
    deps.log.info("{pod}: {reason}: {message}", { pod: `${namespace}/${name}`, reason, message });
    if (!events || !uid) return;
    const now = new Date(deps.clock.now()).toISOString().replace(/\.\d+Z$/, "Z");
    const event: Event = {
      apiVersion: "v1",
      kind: "Event",
      metadata: {
        name: `${name}.${(deps.clock.now() * 1000 + (++serial % 1000)).toString(16)}`,
        namespace,
      },
      involvedObject: { apiVersion: "v1", kind: "Pod", namespace, name, uid },
      type,
      reason,
      message,
      source: { component, host: deps.nodeName },
      reportingComponent: component,
      reportingInstance: deps.nodeName,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
    events.create(namespace, event).catch((err) => {
      deps.log.debug("event not recorded: {err}", { err: String(err) });
    });
  };
}
