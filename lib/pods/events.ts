/**
 * An event recorder like the kubelet's (client-go tools/record): core/v1 Events in the pod's
 * namespace with `source.component: kubelet` and `source.host: <node>`; a repeat of the same
 * event (object, container, type, reason, message) within ten minutes patches `count` and
 * `lastTimestamp` instead of creating another object (the correlator's aggregation); and each pod
 * may emit 25 events in a burst, then one every five minutes (the correlator's spam filter), so a
 * crash-looping pod cannot flood the apiserver. Recording never blocks and never throws.
 * @module
 */
import type { Event, Pod } from "kubernetes-types/core/v1.d.ts";
import { formatTime } from "../../k8s/micro_time.ts";
import { isNotFound } from "../../k8s/errors.ts";
import type { Clock } from "../clock.ts";
import type { Logger } from "../log.ts";
import type { EventsApi } from "./api.ts";

/** One event to record. */
export interface PodEvent {
  type: "Normal" | "Warning";
  reason: string;
  message: string;
  /** `spec.containers{name}` for container events. */
  fieldPath?: string;
}

/** Options for {@link EventRecorder}. */
export interface EventRecorderOptions {
  api: EventsApi;
  clock: Clock;
  log: Logger;
  nodeName: string;
  /** `source.component`; default `kubelet`, which `kubectl describe` users expect. */
  component?: string;
  /** Events per pod in a burst; default 25. */
  burst?: number;
  /** A spent token comes back after this long; default 5 min. */
  refillMs?: number;
  /** Repeats within this window are aggregated; default 10 min. */
  aggregateWindowMs?: number;
}

interface Sent {
  name: string;
  namespace: string;
  count: number;
  firstTimestamp: string;
  lastSeen: number;
}

const MAX_TRACKED = 4096;

/** Records pod events; see the module doc. */
export class EventRecorder {
  #o: Required<EventRecorderOptions>;
  #sent = new Map<string, Sent>();
  #buckets = new Map<string, { tokens: number; at: number }>();
  #chains = new Map<string, Promise<void>>();
  #serial = 0;

  constructor(options: EventRecorderOptions) {
    this.#o = {
      component: "kubelet",
      burst: 25,
      refillMs: 300_000,
      aggregateWindowMs: 600_000,
      ...options,
    };
  }

  /** Records `event` on `pod` in the background. */
  record(pod: Pod, event: PodEvent): void {
    const uid = pod.metadata?.uid ?? "";
    if (!this.#take(uid)) {
      this.#o.log.debug("event {reason} for {pod} dropped by the rate limit", {
        reason: event.reason,
        pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`,
      });
      return;
    }
    const key = [uid, event.fieldPath ?? "", event.type, event.reason, event.message].join("\0");
    const now = this.#o.clock.now();
    const previous = this.#chains.get(key) ?? Promise.resolve();
    const next = previous.then(() => this.#send(pod, event, key, now)).catch((err) => {
      this.#o.log.warn("could not record event {reason} for {pod}: {err}", {
        reason: event.reason,
        pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`,
        err: err instanceof Error ? err.message : String(err),
      });
    });
    this.#chains.set(key, next);
    next.finally(() => {
      if (this.#chains.get(key) === next) this.#chains.delete(key);
    });
  }

  /** Waits for every event recorded so far to be sent (or to fail). */
  async flush(): Promise<void> {
    while (this.#chains.size > 0) await Promise.all(this.#chains.values());
  }

  #take(uid: string): boolean {
    const now = this.#o.clock.now();
    const bucket = this.#buckets.get(uid) ?? { tokens: this.#o.burst, at: now };
    bucket.tokens = Math.min(this.#o.burst, bucket.tokens + (now - bucket.at) / this.#o.refillMs);
    bucket.at = now;
    this.#buckets.delete(uid);
    this.#buckets.set(uid, bucket);
    trim(this.#buckets);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  async #send(pod: Pod, event: PodEvent, key: string, now: number): Promise<void> {
    const timestamp = formatTime(now);
    const sent = this.#sent.get(key);
    if (sent && now - sent.lastSeen < this.#o.aggregateWindowMs) {
      try {
        await this.#o.api.patch(sent.namespace, sent.name, {
          type: "merge",
          body: { count: sent.count + 1, lastTimestamp: timestamp, message: event.message },
        });
        sent.count++;
        sent.lastSeen = now;
        return;
      } catch (err) {
        if (!isNotFound(err)) throw err;
        // The event expired (events live an hour by default): start a new one.
      }
    }
    const created = await this.#o.api.create(
      pod.metadata?.namespace ?? "",
      this.#build(pod, event, timestamp),
    );
    this.#sent.delete(key);
    this.#sent.set(key, {
      name: created.metadata?.name ?? "",
      namespace: created.metadata?.namespace ?? pod.metadata?.namespace ?? "",
      count: 1,
      firstTimestamp: timestamp,
      lastSeen: now,
    });
    trim(this.#sent);
  }

  #build(pod: Pod, event: PodEvent, timestamp: string): Event {
    const name = pod.metadata?.name ?? "";
    // Unique like client-go's `<object>.<hex unix nanos>`.
    const suffix = (BigInt(Date.parse(timestamp)) * 1_000_000n +
      BigInt((++this.#serial * 7919 + Math.floor(Math.random() * 1000)) % 1_000_000))
      .toString(16);
    return {
      apiVersion: "v1",
      kind: "Event",
      metadata: { name: `${name}.${suffix}`, namespace: pod.metadata?.namespace },
      involvedObject: {
        apiVersion: "v1",
        kind: "Pod",
        namespace: pod.metadata?.namespace,
        name,
        uid: pod.metadata?.uid,
        resourceVersion: pod.metadata?.resourceVersion,
        fieldPath: event.fieldPath,
      },
      type: event.type,
      reason: event.reason,
      message: event.message,
      source: { component: this.#o.component, host: this.#o.nodeName },
      reportingComponent: this.#o.component,
      reportingInstance: this.#o.nodeName,
      firstTimestamp: timestamp,
      lastTimestamp: timestamp,
      count: 1,
    };
  }
}

/** Keeps a map (in insertion order = least recently used first) below {@link MAX_TRACKED}. */
function trim<K, V>(map: Map<K, V>): void {
  while (map.size > MAX_TRACKED) map.delete(map.keys().next().value as K);
}
