/**
 * B's Warning events for a forwarded pod, shown in A on the upstream pod (liqo#1781: users had to
 * log into B to see ImagePullBackOff or FailedScheduling). An informer of B's Warning events in
 * the provider's namespace (every namespace with `namespaces: same`); each one about a pod this node forwarded becomes one Event of A on
 * the upstream pod, named after B's event, so a repeat in B (its `count` going up) updates the
 * same Event in A instead of adding one: deduplicated as B's own recorder aggregates them.
 * @module
 */
import type { Event, Pod } from "kubernetes-types/core/v1.d.ts";
import type { Informer, KubeClient } from "../../../k8s/mod.ts";
import type { Logger, ProviderEventsApi } from "../../../provider/mod.ts";
import { isAlreadyExists } from "../../../k8s/mod.ts";
import { upstreamOf } from "../names.ts";

/** What {@link EventRelay} needs. */
export interface EventRelayDeps {
  downstream: KubeClient;
  upstream: ProviderEventsApi;
  /** B's namespace of the forwarded pods; `undefined`: every namespace. */
  namespace: string | undefined;
  nodeName: string;
  log: Logger;
  /** The downstream pod of this node `namespace/name` in B, if there is one. */
  downstreamPod: (namespace: string, name: string) => Pod | undefined;
}

/** Copies B's Warning events about forwarded pods to A. */
export class EventRelay {
  readonly #deps: EventRelayDeps;
  readonly #events: Informer<Event>;
  /** Per B event uid, the count last copied. */
  readonly #copied = new Map<string, number>();
  #writes: Promise<void> = Promise.resolve();

  constructor(deps: EventRelayDeps) {
    this.#deps = deps;
    this.#events = deps.downstream.events.informer({
      namespace: deps.namespace,
      fieldSelector: "type=Warning,involvedObject.kind=Pod",
      name: "downstream warning events",
    });
    this.#events.on("add", (e) => this.#onEvent(e));
    this.#events.on("update", (e) => this.#onEvent(e));
    this.#events.on("delete", (e) => this.#copied.delete(e.metadata?.uid ?? ""));
  }

  /** Watches B's events until `signal` aborts; then waits for the copies in flight. */
  async run(signal: AbortSignal): Promise<void> {
    await this.#events.run(signal);
    await this.#writes;
  }

  #onEvent(event: Event): void {
    const uid = event.metadata?.uid ?? "";
    const count = event.count ?? event.series?.count ?? 1;
    if ((this.#copied.get(uid) ?? 0) >= count) return;
    const pod = this.#deps.downstreamPod(
      event.involvedObject.namespace ?? event.metadata?.namespace ?? "",
      event.involvedObject.name ?? "",
    );
    const up = upstreamOf(pod?.metadata);
    if (!pod || !up?.uid || pod.metadata?.uid !== event.involvedObject.uid) return;
    const first = !this.#copied.has(uid);
    this.#copied.set(uid, count);
    this.#writes = this.#writes.then(() => this.#copy(event, up, count, first)).catch((err) => {
      this.#deps.log.warn("could not copy the downstream event {event} to {pod}: {err}", {
        event: event.metadata?.name,
        pod: `${up.namespace}/${up.name}`,
        err: String(err),
      });
    });
  }

  async #copy(
    event: Event,
    up: { namespace: string; name: string; uid?: string },
    count: number,
    first: boolean,
  ): Promise<void> {
    const name = `${up.name}.b-${(event.metadata?.uid ?? "").slice(0, 18)}`;
    const last = event.lastTimestamp ?? event.eventTime ?? new Date().toISOString();
    const patch = { count, lastTimestamp: last, message: event.message };
    if (!first) {
      await this.#deps.upstream.patch(up.namespace, name, { type: "merge", body: patch });
      return;
    }
    const copy: Event = {
      apiVersion: "v1",
      kind: "Event",
      metadata: { name, namespace: up.namespace },
      involvedObject: {
        apiVersion: "v1",
        kind: "Pod",
        namespace: up.namespace,
        name: up.name,
        uid: up.uid,
        fieldPath: event.involvedObject.fieldPath,
      },
      type: "Warning",
      reason: event.reason,
      message: event.message,
      count,
      firstTimestamp: event.firstTimestamp ?? last,
      lastTimestamp: last,
      // Says where it happened: `kubectl describe` shows "From: <component> (in B)".
      source: {
        component: `${event.source?.component ?? event.reportingComponent ?? "unknown"} (in B)`,
        host: this.#deps.nodeName,
      },
    };
    try {
      await this.#deps.upstream.create(up.namespace, copy);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      await this.#deps.upstream.patch(up.namespace, name, { type: "merge", body: patch });
    }
  }
}
