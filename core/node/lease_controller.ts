/**
 * `LeaseController`: keeps `kube-node-lease/<node>` renewed, the node's heartbeat.
 *
 * Follows the kubelet's lease controller (kubernetes/component-helpers
 * apimachinery/lease/controller.go, which virtual-kubelet ports in
 * node/lease_controller_v1.go): holder = node name, 40 s duration, renewed every quarter of
 * it (10 s) plus up to 4 % jitter (`wait.JitterUntil(sync, renewInterval, 0.04, ...)`), by an
 * update of the last lease it wrote (no GET while that works); on a conflict it reads the
 * lease again and retries, up to 5 times, with backoff; an ownerReference to the Node
 * (kubernetes/kubernetes pkg/kubelet/util/nodelease.go `SetNodeOwnerFunc`) so that the lease
 * goes when the Node does. As in virtual-kubelet, the lease is not renewed while the
 * provider's ping fails — once it has failed for `outageGraceMs` (`--provider-outage-grace`,
 * `./outage.ts`): the node-lifecycle controller then sees the node stop.
 *
 * One difference: the kubelet's `JitterUntil` is sliding (the next wait starts when a renewal
 * has finished), so a renewal that takes 3 s puts the next one 13 s after it. One kubelet's
 * renewals take milliseconds; a process of 1,000 nodes, while it also creates 10,000 pods, waits
 * seconds for some of its answers. Here the wait is counted from when the renewal started, so the
 * renewals stay an interval apart however long each takes (at once if it took longer than that).
 * @module
 */
import type { Lease } from "kubernetes-types/coordination/v1.d.ts";
import { isConflict, isKubeNotFound } from "../../k8s/errors.ts";
import { formatMicroTime } from "../../k8s/micro_time.ts";
import type { Clock } from "../../base/clock.ts";
import type { Logger } from "../../base/log.ts";
import { backoffDelay, Wakeup, withTurnAndDeadline } from "./_timing.ts";
import { raceSignal } from "../../base/cancel.ts";
import { ALWAYS_HEALTHY, type HealthSource } from "./health_monitor.ts";
import { type CallSlots, type NodeApi, type NodeApiClient, nodeApiFromClient } from "./node_api.ts";
import type { NodeOwner } from "./node_controller.ts";
import { pastGrace } from "./outage.ts";

/** The namespace of node leases. */
export const NODE_LEASE_NAMESPACE = "kube-node-lease";

const MAX_UPDATE_RETRIES = 5;

/** What {@link LeaseController} needs. */
export interface LeaseControllerDeps {
  /** The API, or a `KubeClient` to adapt with {@link nodeApiFromClient}. */
  api?: NodeApi;
  client?: NodeApiClient;
  clock: Clock;
  log: Logger;
  nodeName: string;
  /** The Node the lease belongs to: the lease waits for it and points at its uid. */
  owner: NodeOwner;
  /** The provider's health; the lease is not renewed while it is unhealthy. */
  health?: HealthSource;
  /** `spec.leaseDurationSeconds`; default 40. */
  leaseDurationSeconds?: number;
  /** Time between renewals; default a quarter of the duration. */
  renewIntervalMs?: number;
  /** Extra random wait, as a fraction of the interval; default 0.04. */
  jitter?: number;
  /** Source of randomness for the jitter; default `Math.random`. */
  random?: () => number;
  /**
   * Where in the interval this lease's renewals fall, as a fraction in [0, 1): the wait after the
   * first renewal is shortened by that much of the interval. Default 0. Many nodes of one process
   * start together; spreading their phases turns a burst of renewals every interval into an even
   * rate (the kubelet, one node per process, has no such burst).
   */
  phase?: number;
  /**
   * Deadline of each API call, counted from when it gets its turn in `slots`; default the renew
   * interval.
   */
  requestTimeoutMs?: number;
  /** Where the calls wait their turn when many nodes share a client; they go first there. */
  slots?: CallSlots;
  /** Told how long each renewal attempt took and whether it worked; for metrics. */
  onRenewal?: (seconds: number, ok: boolean) => void;
  /** Renewals go on this long after the ping starts failing; default 0 (they stop at once). */
  outageGraceMs?: number;
}

/** Renews the node's lease; see the module doc. */
export class LeaseController {
  /** Resolves after the first successful renewal. */
  readonly ready: Promise<void>;
  #deps: LeaseControllerDeps;
  #api: NodeApi;
  #health: HealthSource;
  #lease?: Lease;
  #paused = false;
  #wakeup = new Wakeup();
  #resolveReady!: () => void;

  constructor(deps: LeaseControllerDeps) {
    if (!deps.api && !deps.client) throw new TypeError("LeaseController needs api or client");
    const duration = deps.leaseDurationSeconds ?? 40;
    if (deps.renewIntervalMs !== undefined && deps.renewIntervalMs >= duration * 1000) {
      throw new RangeError(
        `lease renew interval ${deps.renewIntervalMs} ms is not shorter than the lease duration ` +
          `${duration} s; renew at most every ${duration * 250} ms`,
      );
    }
    this.#deps = deps;
    this.#api = deps.api ?? nodeApiFromClient(deps.client!);
    this.#health = deps.health ?? ALWAYS_HEALTHY;
    this.ready = new Promise((resolve) => (this.#resolveReady = resolve));
  }

  /** The lease as last written. */
  get lease(): Lease | undefined {
    return this.#lease;
  }

  /** The time to wait before the next renewal: the interval plus jitter. */
  nextDelay(): number {
    const interval = this.#interval;
    return interval * (1 + (this.#deps.jitter ?? 0.04) * (this.#deps.random ?? Math.random)());
  }

  /** Renews until `signal` aborts; resolves once the renewal in flight has settled. */
  async run(signal: AbortSignal): Promise<void> {
    // Renew at once when the provider recovers rather than up to an interval later.
    const unsubscribe = this.#health.onChange((h) => h.healthy && this.#wakeup.wake());
    try {
      await raceSignal(this.#deps.owner.ready, signal);
      let advance = this.#interval * Math.min(Math.max(this.#deps.phase ?? 0, 0), 0.99);
      while (!signal.aborted) {
        const started = this.#deps.clock.now();
        await this.#sync(signal);
        const spent = this.#deps.clock.now() - started;
        const wait = Math.max(0, this.nextDelay() - advance - spent);
        await this.#wakeup.sleep(this.#deps.clock, wait, signal);
        advance = 0;
      }
    } catch (err) {
      if (!signal.aborted) throw err;
    } finally {
      unsubscribe();
    }
  }

  async #sync(signal: AbortSignal): Promise<void> {
    const health = this.#health.current();
    if (pastGrace(health, this.#deps.clock.now(), this.#deps.outageGraceMs ?? 0)) {
      if (!this.#paused) {
        this.#deps.log.warn("not renewing lease of node {node} while the provider ping fails", {
          node: this.#deps.nodeName,
        });
      }
      this.#paused = true;
      return;
    }
    if (this.#paused) {
      this.#deps.log.info("renewing lease of node {node} again", { node: this.#deps.nodeName });
      this.#paused = false;
    }
    if (!this.#deps.owner.uid()) return; // Node deleted and not (yet) registered again.
    if (this.#lease && await this.#retryUpdate(this.#lease, signal)) return;
    const { lease, created } = await this.#backoffEnsure(signal);
    this.#lease = lease;
    if (created) this.#resolveReady();
    else await this.#retryUpdate(lease, signal);
  }

  /** Updates from `base` up to 5 times; a conflict re-reads the lease after a backoff. */
  async #retryUpdate(base: Lease, signal: AbortSignal): Promise<boolean> {
    for (let attempt = 0; attempt < MAX_UPDATE_RETRIES; attempt++) {
      const started = this.#deps.clock.now();
      const took = () => (this.#deps.clock.now() - started) / 1000;
      try {
        this.#lease = await this.#call(
          signal,
          (s) => this.#api.updateLease(this.#newLease(base), { signal: s }),
        );
        this.#deps.onRenewal?.(took(), true);
        this.#resolveReady();
        return true;
      } catch (err) {
        if (signal.aborted) throw err;
        this.#deps.onRenewal?.(took(), false);
        if (isKubeNotFound(err)) {
          this.#lease = undefined;
          return false; // Deleted (by the garbage collector, with its Node): create it again.
        }
        this.#deps.log.warn("renewing lease of node {node} failed (attempt {attempt}): {err}", {
          node: this.#deps.nodeName,
          attempt: attempt + 1,
          err: message(err),
        });
        if (isConflict(err)) {
          // Someone else wrote it (another process with this node name?): back off, re-read.
          await this.#deps.clock.sleep(backoffDelay(attempt), signal);
          const ensured = await this.#backoffEnsure(signal);
          if (ensured.created) return true;
          base = ensured.lease;
        }
      }
    }
    this.#deps.log.error("renewing lease of node {node} failed {n} times; next try in {delay} ms", {
      node: this.#deps.nodeName,
      n: MAX_UPDATE_RETRIES,
      delay: this.#interval,
    });
    return false;
  }

  /** Reads the lease, creating it if absent; retries with backoff until it works or aborts. */
  async #backoffEnsure(signal: AbortSignal): Promise<{ lease: Lease; created: boolean }> {
    for (let attempt = 0;; attempt++) {
      const started = this.#deps.clock.now();
      try {
        return await this.#ensure(signal);
      } catch (err) {
        if (signal.aborted) throw err;
        const delay = backoffDelay(attempt);
        this.#deps.log.error(
          "ensuring lease of node {node} failed after {elapsed} ms: {err}; trying again in {delay} ms",
          {
            node: this.#deps.nodeName,
            elapsed: Math.round(this.#deps.clock.now() - started),
            delay: Math.round(delay),
            err: message(err),
          },
        );
        await this.#deps.clock.sleep(delay, signal);
      }
    }
  }

  async #ensure(signal: AbortSignal): Promise<{ lease: Lease; created: boolean }> {
    const name = this.#deps.nodeName;
    try {
      const lease = await this.#call(
        signal,
        (s) => this.#api.getLease(NODE_LEASE_NAMESPACE, name, { signal: s }),
      );
      return { lease, created: false };
    } catch (err) {
      if (!isKubeNotFound(err)) throw err;
    }
    const lease = await this.#call(
      signal,
      (s) => this.#api.createLease(this.#newLease(undefined), { signal: s }),
    );
    this.#deps.log.info("created lease {namespace}/{node}", {
      namespace: NODE_LEASE_NAMESPACE,
      node: name,
    });
    return { lease, created: true };
  }

  /** `base` (or a fresh lease) renewed now, owned by the Node's current uid. */
  #newLease(base: Lease | undefined): Lease {
    const name = this.#deps.nodeName;
    // A shallow copy is enough: spec and the owner references are replaced below. The managed
    // fields stay out of the body; the apiserver keeps its own when an update leaves them unset
    // (k8s.io/apiserver pkg/endpoints/handlers/fieldmanager: the live object's are used).
    const { managedFields: _, ...metadata } = base?.metadata ?? {};
    const lease: Lease = base ? { ...base, metadata } : {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name, namespace: NODE_LEASE_NAMESPACE },
      spec: {},
    };
    lease.spec = {
      ...lease.spec,
      holderIdentity: name,
      leaseDurationSeconds: this.#deps.leaseDurationSeconds ?? 40,
      renewTime: formatMicroTime(this.#deps.clock.now()),
    };
    const uid = this.#deps.owner.uid();
    const others = (lease.metadata?.ownerReferences ?? []).filter((r) => r.kind !== "Node");
    if (uid) {
      // A Node registered again has a new uid; the old reference would let the garbage
      // collector delete the lease (virtual-kubelet/virtual-kubelet#886).
      lease.metadata!.ownerReferences = [
        ...others,
        { apiVersion: "v1", kind: "Node", name, uid },
      ];
    }
    return lease;
  }

  #call<T>(signal: AbortSignal, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const timeout = this.#deps.requestTimeoutMs ?? this.#interval;
    return withTurnAndDeadline(this.#deps.slots, true, this.#deps.clock, timeout, signal, call);
  }

  get #interval(): number {
    return this.#deps.renewIntervalMs ?? (this.#deps.leaseDurationSeconds ?? 40) * 250;
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
