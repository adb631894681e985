/**
 * An event recorder like the kubelet's (client-go tools/record): core/v1 Events in the pod's
 * namespace with `source.component: kubelet` and `source.host: <node>`; a repeat of the same
 * event (object, container, type, reason, message) within ten minutes patches `count` and
 * `lastTimestamp` instead of creating another object (the correlator's aggregation); and each pod
 * may emit 25 events in a burst, then one every five minutes (the correlator's spam filter), so a
 * crash-looping pod cannot flood the apiserver. Recording never blocks and never throws.
 *
 * Events are sent one at a time from a queue, as client-go's broadcaster does (tools/record
 * event.go, one goroutine writing to the sink), so that a thousand pods starting at once do not
 * turn into two thousand event writes in flight ahead of their status writes. The queue keeps at
 * most `maxQueued` events and drops newer ones beyond that (client-go keeps 1,000; a virtual node
 * holds far more pods than a kubelet's 110, so more are kept). While `holdWhile` says status
 * writes are waiting, events wait too (at most `maxHoldMs` at a time): when a thousand pods start
 * at once, their status is what controllers and users wait for, and events would take a share of
 * the apiserver's throughput ahead of it.
 * @module
 */
import type { Event, Pod } from "kubernetes-types/core/v1.d.ts";
import { formatTime } from "../../k8s/micro_time.ts";
import { isKubeNotFound, isNamespaceTerminating } from "../../k8s/errors.ts";
import type { Clock } from "../../base/clock.ts";
import type { Logger } from "../../base/log.ts";
import type { EventsApi } from "./api.ts";

/** One event to record. */
export interface PodEvent {
  type: "Normal" | "Warning";
  reason: string;
  message: string;
  /** `spec.containers{name}` for container events. */
  fieldPath?: string;
  /** `source.component` when not the recorder's (a provider's relayed events). */
  component?: string;
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
  /** Events waiting to be sent at most; newer ones are dropped. Default 25,000. */
  maxQueued?: number;
  /** While this returns true (status writes waiting), events wait; default never. */
  holdWhile?: () => boolean;
  /** Events wait for `holdWhile` at most this long at a time; default 10 s. */
  maxHoldMs?: number;
  /**
   * Told how many events a flush dropped (shutdown came first), instead of a warning logged here:
   * a process with a recorder per node says it once, for all of them. Default: a warning.
   */
  onUnsent?: (count: number) => void;
}

/** What an event needs of its pod; kept instead of the pod, which may be large. */
interface PodRef {
  namespace: string;
  name: string;
  uid: string;
  resourceVersion?: string;
}

interface Queued {
  pod: PodRef;
  event: PodEvent;
  /** The aggregation key within the pod: container, type, reason, message. */
  key: string;
  now: number;
}

/** Drops a gone pod's state once the events queued before it are sent (see `forgetPod`). */
interface ForgetMarker {
  forget: string;
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
  /** Sent events by pod uid, then by key; pods least recently used first. */
  #sent = new Map<string, Map<string, Sent>>();
  #sentCount = 0;
  #buckets = new Map<string, { tokens: number; at: number }>();
  #queue: (Queued | ForgetMarker)[] = [];
  #head = 0;
  #draining: Promise<void> | undefined;
  #dropped = 0;
  #serial = 0;
  #flushing = false;
  /** When the current hold began; a hold ends when `holdWhile` turns false or after maxHoldMs. */
  #heldSince: number | undefined;
  /** After a hold that ran out, events go unheld until then (one second), then may wait again. */
  #unheldUntil = 0;
  /** Wakes a hold at once when flush begins. */
  #holdWake = new AbortController();
  /** Namespaces found being deleted, and when: events recorded before then are not sent. */
  #terminating = new Map<string, number>();

  constructor(options: EventRecorderOptions) {
    this.#o = {
      component: "kubelet",
      burst: 25,
      refillMs: 300_000,
      aggregateWindowMs: 600_000,
      maxQueued: 25_000,
      holdWhile: () => false,
      maxHoldMs: 10_000,
      onUnsent: (count) => this.#o.log.warn("{count} events not sent before shutdown", { count }),
      ...options,
    };
  }

  /**
   * Sets what the recorder learns only once its pod controller exists (the recorder is made
   * before the provider, which records through it too): when to hold events back, and who is
   * told of events a shutdown dropped.
   */
  attach(options: Pick<EventRecorderOptions, "holdWhile" | "onUnsent">): void {
    if (options.holdWhile) this.#o.holdWhile = options.holdWhile;
    if (options.onUnsent) this.#o.onUnsent = options.onUnsent;
  }

  /** Events waiting to be sent. */
  get queued(): number {
    return this.#queue.length - this.#head;
  }

  /**
   * Pods the recorder keeps aggregation or rate-limit state for; falls back to 0 once every pod
   * it saw was forgotten. For tests and the pod controller's `held`.
   */
  get trackedPods(): number {
    return new Set([...this.#sent.keys(), ...this.#buckets.keys()]).size;
  }

  /**
   * Forgets a pod that is gone (its uid): its aggregation and rate-limit state, once the events
   * already queued for it are sent. Without this a deleted pod's state stayed until 4,096 newer
   * pods pushed it out: under a rolling churn the recorder grew for minutes before it levelled.
   * (client-go's correlator has no forget; its LRU bounds it the same way.)
   */
  forgetPod(uid: string): void {
    if (this.#draining) this.#queue.push({ forget: uid });
    else this.#drop(uid);
  }

  #drop(uid: string): void {
    this.#buckets.delete(uid);
    this.#dropSent(uid);
  }

  #dropSent(uid: string): void {
    this.#sentCount -= this.#sent.get(uid)?.size ?? 0;
    this.#sent.delete(uid);
  }

  /** Records `event` on `pod` in the background. */
  record(pod: Pod, event: PodEvent): void {
    const m = pod.metadata ?? {};
    const ref: PodRef = {
      namespace: m.namespace ?? "",
      name: m.name ?? "",
      uid: m.uid ?? "",
      resourceVersion: m.resourceVersion,
    };
    if (!this.#take(ref.uid)) {
      this.#o.log.debug("event {reason} for {pod} dropped by the rate limit", {
        reason: event.reason,
        pod: `${ref.namespace}/${ref.name}`,
      });
      return;
    }
    if (this.queued >= this.#o.maxQueued) {
      if (this.#dropped++ % 1000 === 0) {
        this.#o.log.warn("event queue full ({max}); {dropped} events dropped so far", {
          max: this.#o.maxQueued,
          dropped: this.#dropped,
        });
      }
      return;
    }
    const key = [
      event.component ?? "",
      event.fieldPath ?? "",
      event.type,
      event.reason,
      event.message,
    ]
      .join("\0");
    this.#queue.push({ pod: ref, event, key, now: this.#o.clock.now() });
    this.#draining ??= this.#drain().finally(() => this.#draining = undefined);
  }

  /**
   * Waits for every event recorded so far to be sent (or to fail). If `signal` aborts first,
   * the events still queued are dropped (as client-go's broadcaster drops them on shutdown).
   */
  async flush(options: { signal?: AbortSignal } = {}): Promise<void> {
    const { signal } = options;
    this.#flushing = true;
    this.#holdWake.abort();
    const aborted = new Promise<void>((resolve) => {
      if (signal?.aborted) resolve();
      signal?.addEventListener("abort", () => resolve(), { once: true });
    });
    while (this.#draining && !signal?.aborted) await Promise.race([this.#draining, aborted]);
    this.#flushing = false;
    this.#holdWake = new AbortController();
    if (this.queued > 0) {
      this.#o.onUnsent(this.queued);
      this.#queue = [];
      this.#head = 0;
    }
  }

  async #drain(): Promise<void> {
    while (this.#head < this.#queue.length) {
      const item = this.#queue[this.#head++];
      // Drop the sent prefix now and then, so a long queue is not copied for every event.
      if (this.#head >= 1024 && this.#head * 2 >= this.#queue.length) {
        this.#queue = this.#queue.slice(this.#head);
        this.#head = 0;
      }
      if ("forget" in item) {
        this.#drop(item.forget);
        continue;
      }
      const terminatingSince = this.#terminating.get(item.pod.namespace);
      if (terminatingSince !== undefined && item.now <= terminatingSince) continue;
      await this.#hold();
      try {
        await this.#send(item);
      } catch (err) {
        if (isNamespaceTerminating(err)) {
          this.#namespaceTerminating(item);
          continue;
        }
        this.#o.log.warn("could not record event {reason} for {pod}: {err}", {
          reason: item.event.reason,
          pod: `${item.pod.namespace}/${item.pod.name}`,
          err: err instanceof Error ? err.message : String(err),
        });
      }
    }
    this.#queue = [];
    this.#head = 0;
  }

  /**
   * One line per namespace being deleted, not one per pod (client-go's recorder logs these at
   * V(5) only); the events already queued for it are dropped without another request.
   */
  #namespaceTerminating(item: Queued): void {
    const namespace = item.pod.namespace;
    if (!this.#terminating.has(namespace)) {
      this.#o.log.info(
        "namespace {namespace} is being deleted: its pods' events are not recorded",
        {
          namespace,
        },
      );
    }
    this.#o.log.debug("event {reason} for {pod} not recorded: namespace is being deleted", {
      reason: item.event.reason,
      pod: `${namespace}/${item.pod.name}`,
    });
    this.#terminating.delete(namespace);
    this.#terminating.set(namespace, this.#o.clock.now());
    trim(this.#terminating);
  }

  /**
   * Waits while status writes are waiting, up to maxHoldMs since the hold began; then events go
   * for a second before the next hold, so a long busy spell still lets some through.
   */
  async #hold(): Promise<void> {
    const { clock, holdWhile, maxHoldMs } = this.#o;
    while (!this.#flushing && clock.now() >= this.#unheldUntil && holdWhile()) {
      const now = clock.now();
      this.#heldSince ??= now;
      if (now - this.#heldSince >= maxHoldMs) {
        this.#unheldUntil = now + 1000;
        break;
      }
      await clock.sleep(Math.min(100, this.#heldSince + maxHoldMs - now), this.#holdWake.signal)
        .catch(() => {});
    }
    this.#heldSince = undefined;
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

  async #send({ pod, event, key, now }: Queued): Promise<void> {
    const timestamp = formatTime(now);
    const sent = this.#sent.get(pod.uid)?.get(key);
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
        if (!isKubeNotFound(err)) throw err;
        // The event expired (events live an hour by default): start a new one.
      }
    }
    const created = await this.#o.api.create(pod.namespace, this.#build(pod, event, timestamp));
    const ofPod = this.#sent.get(pod.uid) ?? new Map<string, Sent>();
    this.#sent.delete(pod.uid);
    this.#sent.set(pod.uid, ofPod);
    if (!ofPod.has(key)) this.#sentCount++;
    ofPod.set(key, {
      name: created.metadata?.name ?? "",
      namespace: created.metadata?.namespace ?? pod.namespace,
      count: 1,
      firstTimestamp: timestamp,
      lastSeen: now,
    });
    // At most MAX_TRACKED events in all, as client-go's LRU: the least recently used pods go
    // (their rate limit stays), or the oldest events of a pod that alone has that many.
    while (this.#sentCount > MAX_TRACKED) {
      const [uid, oldest] = this.#sent.entries().next().value as [string, Map<string, Sent>];
      if (this.#sent.size > 1) this.#dropSent(uid);
      else {
        oldest.delete(oldest.keys().next().value as string);
        this.#sentCount--;
      }
    }
  }

  #build(pod: PodRef, event: PodEvent, timestamp: string): Event {
    // Unique like client-go's `<object>.<hex unix nanos>`.
    const suffix = (BigInt(Date.parse(timestamp)) * 1_000_000n +
      BigInt((++this.#serial * 7919 + Math.floor(Math.random() * 1000)) % 1_000_000))
      .toString(16);
    return {
      apiVersion: "v1",
      kind: "Event",
      metadata: { name: `${pod.name}.${suffix}`, namespace: pod.namespace },
      involvedObject: {
        apiVersion: "v1",
        kind: "Pod",
        namespace: pod.namespace,
        name: pod.name,
        uid: pod.uid,
        resourceVersion: pod.resourceVersion,
        fieldPath: event.fieldPath,
      },
      type: event.type,
      reason: event.reason,
      message: event.message,
      source: { component: event.component ?? this.#o.component, host: this.#o.nodeName },
      reportingComponent: event.component ?? this.#o.component,
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
