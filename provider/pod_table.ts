/**
 * The pods a provider runs on a remote backend, kept by `namespace/name` as records of the
 * provider's own kind, with what every such provider would otherwise write again: the pod with
 * its status as getPod and listPods hand it out, status pushes to notifyPods subscribers without
 * repeats, and a gate that holds listPods and deletions until the backend's existing pods are
 * adopted — a kubelet that restarts may see a deletion first, and "not mine" would leave that
 * pod running on the backend.
 * @module
 */
import type { Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import { raceSignal } from "../base/cancel.ts";
import type { Logger } from "./logger.ts";

/** What the table needs of a record: the last pod the core handed over (or a stand-in). */
export interface PodTableRecord {
  /** The pod as the core handed it over; the table writes its status here. */
  pod: Pod;
}

/** What {@link PodTable} needs. */
export interface PodTableOptions<R> {
  /** The record's pod status now; `terminal` when the pod ends by deletion. */
  statusOf: (record: R, terminal: boolean) => PodStatus;
  /** Where a subscriber that throws is reported. */
  log: Logger;
}

/** A provider's pods by `namespace/name`; see the module doc. */
export class PodTable<R extends PodTableRecord> {
  /** The records by {@link podKey}; a supervisor may read them and add adopted ones. */
  readonly records: Map<string, R> = new Map();
  readonly #options: PodTableOptions<R>;
  readonly #push: PodStatusPush;
  #adopted: Promise<void> = Promise.resolve();

  /** An empty table; see {@link PodTableOptions}. */
  constructor(options: PodTableOptions<R>) {
    this.#options = options;
    this.#push = new PodStatusPush(options.log);
  }

  /** Holds {@link listPods} and {@link ofPod} until `adopted` settles. */
  holdUntil(adopted: Promise<void>): void {
    this.#adopted = adopted.catch(() => {});
  }

  /** Resolves once the backend's existing pods are adopted; rejects when `signal` aborts first. */
  adopted(signal?: AbortSignal): Promise<void> {
    return raceSignal(this.#adopted, signal);
  }

  /** The record of `namespace/name`, if any. */
  get(namespace: string | undefined, name: string | undefined): R | undefined {
    return this.records.get(podKey(namespace, name));
  }

  /**
   * The record of this very pod (same name, and the same uid when the pod has one), once
   * adoption is done: what a deletion acts on.
   */
  async ofPod(pod: Pod, signal?: AbortSignal): Promise<R | undefined> {
    await this.adopted(signal);
    const record = this.get(pod.metadata?.namespace, pod.metadata?.name);
    if (!record) return undefined;
    if (pod.metadata?.uid && record.pod.metadata?.uid !== pod.metadata.uid) return undefined;
    return record;
  }

  /** Forgets `record` (its last status sent) and what was last sent for it. */
  forget(record: R): void {
    const k = podKeyOf(record.pod);
    if (this.records.get(k) === record) this.records.delete(k);
    this.#push.forget(record.pod);
  }

  /** The record's pod with its current status (also kept on the record), as a copy. */
  withStatus(record: R, terminal = false): Pod {
    const status = this.#options.statusOf(record, terminal);
    (record.pod as { status?: PodStatus }).status = status;
    return structuredClone({ apiVersion: "v1", kind: "Pod", ...record.pod, status });
  }

  /** Pushes the record's status to every subscriber, unless it is what was last pushed. */
  notify(record: R, terminal = false): void {
    this.send(this.withStatus(record, terminal));
  }

  /** Pushes `pod` (with its status) to every subscriber, unless it is what was last pushed. */
  send(pod: Pod): void {
    this.#push.send(pod);
  }

  /** `Provider.getPod`. */
  getPod(namespace: string, name: string): Promise<Pod | undefined> {
    const record = this.get(namespace, name);
    return Promise.resolve(record && this.withStatus(record));
  }

  /** `Provider.listPods`: after adoption, every record's pod. */
  async listPods(signal?: AbortSignal): Promise<Pod[]> {
    await this.adopted(signal);
    return [...this.records.values()].map((r) => this.withStatus(r));
  }

  /** `Provider.notifyPods`. */
  subscribe(callback: (pod: Pod) => void): () => void {
    return this.#push.subscribe(callback);
  }
}

/**
 * `notifyPods` for any provider: each pod's status is pushed to every subscriber once per change
 * (the same uid and status again is not sent), a copy each; a subscriber that throws is logged
 * and the others still get the pod.
 */
export class PodStatusPush {
  readonly #log: Logger;
  readonly #callbacks = new Set<(pod: Pod) => void>();
  readonly #lastSent = new Map<string, string>();

  /** No subscribers yet; `log` reports one that throws. */
  constructor(log: Logger) {
    this.#log = log;
  }

  /** `Provider.notifyPods`: adds `callback`; the function returned removes it. */
  subscribe(callback: (pod: Pod) => void): () => void {
    this.#callbacks.add(callback);
    return () => void this.#callbacks.delete(callback);
  }

  /** Pushes `pod` with its status, unless that is what was last pushed for its name. */
  send(pod: Pod): void {
    const k = podKeyOf(pod);
    const text = JSON.stringify([pod.metadata?.uid, pod.status]);
    if (this.#lastSent.get(k) === text) return;
    this.#lastSent.set(k, text);
    for (const callback of this.#callbacks) {
      try {
        callback(structuredClone(pod));
      } catch (err) {
        this.#log.error("pod status callback threw: {err}", { err: String(err) });
      }
    }
  }

  /** Forgets what was last pushed for the pod's name: a new pod of that name starts over. */
  forget(pod: Pod): void {
    this.#lastSent.delete(podKeyOf(pod));
  }
}

/**
 * `namespace/name`: the one key of a pod across vkubelet (the core's caches and queues, a
 * {@link PodTable}, a provider's own maps), as client-go's `MetaNamespaceKeyFunc`.
 *
 * @example Usage
 * ```ts
 * import { podKey } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * assert.equal(podKey("shop", "web-0"), "shop/web-0");
 * ```
 */
export function podKey(namespace: string | undefined, name: string | undefined): string {
  return `${namespace ?? ""}/${name ?? ""}`;
}

/**
 * {@link podKey} of a pod (or any namespaced object).
 *
 * @example Usage
 * ```ts
 * import { podKeyOf } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * assert.equal(podKeyOf({ metadata: { namespace: "shop", name: "web-0" } }), "shop/web-0");
 * ```
 */
export function podKeyOf(pod: { metadata?: { namespace?: string; name?: string } }): string {
  return podKey(pod.metadata?.namespace, pod.metadata?.name);
}
