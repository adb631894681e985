/**
 * Events the provider records on a pod (the plugin refused or did not answer, restarts, a lost job),
 * written with vkubelet's own API client as `source.component: vkubelet-interlink`. Best effort:
 * recording never throws and never delays the pod's work.
 * @module
 */
import type { Event, Pod } from "kubernetes-types/core/v1.d.ts";
import type { ProviderDeps } from "../../provider/mod.ts";

/** Records one event on a pod. */
export type PodEventSink = (
  pod: Pod,
  type: "Normal" | "Warning",
  reason: string,
  message: string,
) => void;

/**
 * An event sink on the typed client's events API (`deps.kube.events`); without one (unit tests)
 * events are only logged.
 */
export function podEventSink(
  deps: Pick<ProviderDeps, "kube" | "nodeName" | "log" | "clock">,
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
      source: { component: "vkubelet-interlink", host: deps.nodeName },
      reportingComponent: "vkubelet-interlink",
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
