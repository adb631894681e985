/**
 * B's status, pushed back to the core: the last upstream pod the core handed over, by `ns/name`;
 * each downstream pod event of B's informer becomes that pod with B's status; a pod that left B
 * is reported with every container terminated. Identical reports are sent once.
 * @module
 */
import type { Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import { podKey, PodStatusPush, type ProviderDeps } from "../../../provider/mod.ts";
import { upstreamOf } from "../names.ts";
import { goneStatus, upstreamStatus } from "./status.ts";

/** What {@link StatusRelay} needs. */
export interface StatusRelayDeps {
  internalIp: string;
  clock: ProviderDeps["clock"];
  log: ProviderDeps["log"];
  /** Called when a pod has left B, after its last status went out: free what it held. */
  release: (key: string, pod: Pod) => void;
  /**
   * `gateway`: the pod's IPs in A by upstream `ns/name`, reported in place of B's (none while
   * it has none there): B's IP is not reachable from A.
   */
  podAddress?: (key: string) => { podIP: string; podIPs: string[] } | undefined;
}

/** Maps downstream pods back to upstream ones and reports their status to the core. */
export class StatusRelay {
  readonly #deps: StatusRelayDeps;
  /** Last pod handed over by the core, by upstream `ns/name`. */
  readonly #upstream = new Map<string, Pod>();
  readonly #deleting = new Set<string>();
  readonly #push: PodStatusPush;
  /** Pods failed on purpose (unschedulable in B), by `ns/name`: the reason their end reports. */
  readonly #failures = new Map<string, { reason: string; message: string }>();

  constructor(deps: StatusRelayDeps) {
    this.#deps = deps;
    this.#push = new PodStatusPush(deps.log);
  }

  /** Keeps a copy of the pod the core handed over, for the metadata and spec of reports. */
  remember(k: string, pod: Pod): void {
    this.#upstream.set(k, structuredClone(pod));
  }

  /** Marks the pod as deleted upstream (`on`), or as wanted again. */
  setDeleting(k: string, on: boolean): void {
    if (on) this.#deleting.add(k);
    else this.#deleting.delete(k);
  }

  /** Calls `callback` with every changed upstream pod status. */
  notifyPods(callback: (pod: Pod) => void): () => void {
    return this.#push.subscribe(callback);
  }

  /** The upstream pod a downstream one stands for, with B's status. */
  toUpstream(downstream: Pod): Pod | undefined {
    const up = upstreamOf(downstream.metadata);
    if (!up) return undefined;
    const record = this.#upstream.get(podKey(up.namespace, up.name));
    const sameUid = record?.metadata?.uid === up.uid;
    const metadata = sameUid
      ? structuredClone(record!.metadata)
      : { namespace: up.namespace, name: up.name, uid: up.uid };
    return {
      apiVersion: "v1",
      kind: "Pod",
      metadata,
      spec: sameUid ? structuredClone(record!.spec) : undefined,
      status: this.#status(podKey(up.namespace, up.name), downstream),
    };
  }

  /**
   * B's status as A sees it; with `podAddress`, the pod's IPs in A (a `hostNetwork` pod has none
   * there: B's, its node's, is reported).
   */
  #status(k: string, downstream: Pod): PodStatus {
    const status = upstreamStatus(downstream, this.#deps.internalIp);
    if (!this.#deps.podAddress || downstream.spec?.hostNetwork) return status;
    delete status.podIP;
    delete status.podIPs;
    const address = this.#deps.podAddress(k);
    if (address) {
      status.podIP = address.podIP;
      status.podIPs = address.podIPs.map((ip) => ({ ip }));
    }
    return status;
  }

  /** A downstream pod was added or changed. */
  onDownstream(downstream: Pod): void {
    const pod = this.toUpstream(downstream);
    if (pod) this.#push.send(pod);
  }

  /**
   * Fails the upstream pod with `reason` now (its twin in B is being removed), so that A's
   * controllers replace it; the report when the twin is gone keeps the reason.
   */
  fail(k: string, downstream: Pod, reason: string, message: string): void {
    this.#failures.set(k, { reason, message });
    const up = this.toUpstream(downstream);
    if (!up) return;
    const status = goneStatus(up.status, {
      deleting: false,
      reason,
      message,
      nowIso: this.#nowIso(),
    });
    this.#push.send({ ...up, status });
  }

  /** A downstream pod is gone from B. */
  onDownstreamGone(downstream: Pod): void {
    const up = upstreamOf(downstream.metadata);
    if (!up) return;
    const k = podKey(up.namespace, up.name);
    const record = this.#upstream.get(k);
    if (record && record.metadata?.uid !== up.uid) return; // an older twin we replaced
    this.finish(k, record ?? { metadata: up }, downstream);
  }

  /** The pod has left B: report every container terminated, release what it held. */
  finish(k: string, pod: Pod, downstream: Pod | undefined): void {
    const failure = this.#failures.get(k);
    const deleting = this.#deleting.has(k) && !failure;
    const last = downstream ? this.#status(k, downstream) : pod.status;
    const status = goneStatus(last, {
      deleting,
      reason: failure?.reason ?? (deleting ? "Terminated" : "DownstreamPodDeleted"),
      message: failure?.message ??
        (deleting
          ? "The pod was deleted in the downstream cluster"
          : "The pod's twin in the downstream cluster was deleted there"),
      nowIso: this.#nowIso(),
    });
    const record = this.#upstream.get(k);
    const gone: Pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: structuredClone(record?.metadata ?? pod.metadata),
      spec: record?.spec,
      status,
    };
    this.#push.send(gone);
    this.#push.forget(gone);
    this.#deps.release(k, pod);
    this.#upstream.delete(k);
    this.#deleting.delete(k);
    this.#failures.delete(k);
  }

  #nowIso(): string {
    return new Date(this.#deps.clock.now()).toISOString().replace(/\.\d+Z$/, "Z");
  }
}
