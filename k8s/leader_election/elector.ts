/**
 * Leader election between replicas of one virtual node, through a `coordination.k8s.io/v1`
 * Lease of their own (not the node's Lease), with client-go's semantics
 * (kubernetes/client-go `tools/leaderelection/leaderelection.go`):
 *
 * - a candidate tries every retry period (jittered by up to 20 %) and takes the lease when it
 *   is free, or when its record has not changed for `leaseDurationSeconds` by the candidate's
 *   own monotonic clock, counted from when its GET *returned* with the changed record (client-go
 *   `setObservedRecord` reads the clock after `Lock.Get`), so clocks need not agree between
 *   hosts, a slow GET cannot make the lease look older than it is, and a step of the wall clock
 *   does not expire it;
 * - the leader renews every retry period; when no renewal has worked for the renew deadline it
 *   stops leading — before the lease can expire for anyone else, because the deadline is
 *   shorter than the lease duration;
 * - on shutdown the leader releases the lease (holder cleared, duration 1 s), so a standby takes
 *   it at its next try instead of waiting for expiry.
 *
 * While it leads, it keeps a {@link LeadershipFence} open until the last renewal's start plus
 * the renew deadline (on the wall and the monotonic clock); the work started by
 * `onStartedLeading` gets a signal that aborts when leadership ends — at the latest by a timer at
 * the fence's deadline, not when a renewal still in flight answers, and each renewal's timeout
 * is the time left on the fence (client-go `renew` bounds its retries by `RenewDeadline` the
 * same way). After a term the replica goes back to being a candidate (a standby).
 * @module
 */
import type { Lease, LeaseSpec } from "kubernetes-types/coordination/v1.d.ts";
import type { Clock } from "../../base/clock.ts";
import type { Logger } from "../../base/log.ts";
import { isAlreadyExists, isForbidden, isKubeNotFound } from "../errors.ts";
import { formatMicroTime } from "../micro_time.ts";
import type { FenceMark, LeadershipFence } from "./fence.ts";

/** The Lease calls the elector makes (a `KubeClient`'s `leases` fits). */
export interface LeaseStore {
  get(namespace: string, name: string, options?: { signal?: AbortSignal }): Promise<Lease>;
  create(namespace: string, lease: Lease, options?: { signal?: AbortSignal }): Promise<Lease>;
  update(lease: Lease, options?: { signal?: AbortSignal }): Promise<Lease>;
}

/** What {@link LeaderElector} needs. Durations in milliseconds. */
export interface LeaderElectorDeps {
  leases: LeaseStore;
  clock: Clock;
  log: Logger;
  fence: LeadershipFence;
  namespace: string;
  name: string;
  /** This replica's `holderIdentity`, unique among the replicas. */
  identity: string;
  /** Written as `leaseDurationSeconds` (rounded up to whole seconds). */
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /**
   * Starts the leader's work; the returned promise settles when that work has stopped. `signal`
   * aborts when leadership ends. Work that ends by itself gives leadership up.
   */
  onStartedLeading(signal: AbortSignal): Promise<void>;
  /** Told after a term's work has stopped. */
  onStoppedLeading?(): void;
  /** Told whenever the observed holder changes (`""` when the lease is free). */
  onNewLeader?(identity: string): void;
}

/** client-go's `JitterFactor` for the candidate's retries. */
const JITTER = 0.2;

/** Elects a leader among replicas; see the module doc. */
export class LeaderElector {
  readonly #deps: LeaderElectorDeps;
  #observed?: LeaseSpec;
  #observedJson = "";
  /** When (monotonic ms) a GET or write first returned the record we hold. */
  #observedAtMono = 0;
  #leading = false;
  #lastError = "";

  constructor(deps: LeaderElectorDeps) {
    if (!(deps.leaseDurationMs > deps.renewDeadlineMs)) {
      throw new RangeError("leaseDurationMs must be longer than renewDeadlineMs");
    }
    if (!(deps.renewDeadlineMs > deps.retryPeriodMs * (1 + JITTER))) {
      throw new RangeError("renewDeadlineMs must be longer than 1.2 × retryPeriodMs");
    }
    this.#deps = deps;
  }

  /** True while this replica leads. */
  get isLeader(): boolean {
    return this.#leading;
  }

  /** The holder last seen in the lease (`""` when free or not yet read). */
  get leader(): string {
    return this.#observed?.holderIdentity ?? "";
  }

  /** Campaigns, leads, and campaigns again, until `signal` aborts; releases the lease then. */
  async run(signal: AbortSignal): Promise<void> {
    const { clock, log } = this.#deps;
    while (!signal.aborted) {
      if (!await this.#acquire(signal)) break;
      const term = new AbortController();
      this.#leading = true;
      log.info("became the leader (lease {lease})", { lease: this.#leaseName });
      const work = this.#deps.onStartedLeading(term.signal).catch((err) => {
        if (!term.signal.aborted) log.error("the leader's work failed: {err}", { err });
      });
      // Renewals stop with the term, also when the work ended by itself.
      const renewing = new AbortController();
      const renewal = this.#renew(AbortSignal.any([signal, renewing.signal]));
      // The fence's deadline ends the term by itself, even while a renewal waits for an answer.
      const expired = this.#deps.fence.closed(renewing.signal).then(() => "lost" as const);
      const outcome = await Promise.race([renewal, expired, work.then(() => "gave up" as const)]);
      this.#leading = false;
      this.#deps.fence.close();
      term.abort(new Error(`leadership ended: ${outcome}`));
      renewing.abort();
      await Promise.all([renewal, expired]);
      // Release at once: the fence already stops our writes, so the standby may start now.
      if (outcome !== "lost") await this.#release();
      if (outcome === "lost") {
        log.warn("lost the lease: not renewed within the renew deadline, or taken; writes stopped");
      }
      await work;
      this.#deps.onStoppedLeading?.();
      log.info(signal.aborted ? "stopped leading; exiting" : "stopped leading; standing by again");
      // After giving up, let another replica take the lease first.
      if (outcome === "gave up" && !signal.aborted) {
        await clock.sleep(this.#deps.leaseDurationMs, signal).catch(() => {});
      }
    }
  }

  get #leaseName(): string {
    return `${this.#deps.namespace}/${this.#deps.name}`;
  }

  /** Tries every retry period (jittered) until the lease is ours; false if `signal` aborted. */
  async #acquire(signal: AbortSignal): Promise<boolean> {
    const { clock, retryPeriodMs } = this.#deps;
    while (!signal.aborted) {
      if (await this.#tryAcquireOrRenew(signal)) return true;
      try {
        await clock.sleep(retryPeriodMs * (1 + Math.random() * JITTER), signal);
      } catch {
        return false;
      }
    }
    return false;
  }

  /** Renews every retry period; resolves with why leadership ended. */
  async #renew(signal: AbortSignal): Promise<"lost" | "stopped"> {
    const { clock, retryPeriodMs, fence, identity } = this.#deps;
    while (true) {
      try {
        await clock.sleep(retryPeriodMs, signal);
      } catch {
        return "stopped";
      }
      if (!fence.open) return "lost"; // e.g. this process was paused past the deadline
      await this.#tryAcquireOrRenew(signal);
      if (signal.aborted) return "stopped";
      // Another holder in the lease means it expired for the others: stop now, not at the deadline.
      if (!fence.open || this.leader !== identity) return "lost";
    }
  }

  /**
   * One attempt (client-go `tryAcquireOrRenew`): read the lease, and write ourselves into it if
   * it is free, expired by our observation, or already ours. True when the write worked.
   */
  async #tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const { leases, clock, namespace, name, identity, fence, renewDeadlineMs } = this.#deps;
    const started = fence.mark();
    // A leader's renewal may take no longer than its fence stays open.
    const limitMs = this.#leading ? Math.min(renewDeadlineMs, fence.remainingMs) : renewDeadlineMs;
    if (limitMs <= 0) return false;
    const timeout = this.#timeout(signal, limitMs);
    try {
      let lease: Lease;
      try {
        lease = await leases.get(namespace, name, { signal: timeout.signal });
      } catch (err) {
        if (!isKubeNotFound(err)) throw err;
        const created = await leases.create(namespace, {
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: { name, namespace },
          spec: this.#spec(started.wall, undefined),
        }, { signal: timeout.signal });
        return this.#won(created, started, timeout.signal);
      }
      const spec = lease.spec ?? {};
      // Seen now that the GET has returned (client-go `setObservedRecord` after `Lock.Get`).
      this.#observe(spec, clock.monotonic());
      const holder = spec.holderIdentity ?? "";
      const expiresMono = this.#observedAtMono + (spec.leaseDurationSeconds ?? 0) * 1000;
      if (holder !== "" && holder !== identity && expiresMono > started.mono) return false;
      const updated = await leases.update(
        { ...lease, spec: this.#spec(started.wall, spec) },
        { signal: timeout.signal },
      );
      return this.#won(updated, started, timeout.signal);
    } catch (err) {
      // A conflict or a taken name means another replica wrote first: not an error.
      if (!signal.aborted && !isAlreadyExists(err)) this.#warnOnce(err);
      return false;
    } finally {
      timeout.done();
    }
  }

  /**
   * Our write of the lease worked: the fence opens until the renew deadline from its start —
   * unless the answer came after the attempt's timeout, when the fence may already have closed
   * and the term ended (a late answer opens nothing).
   */
  #won(written: Lease, started: FenceMark, attempt: AbortSignal): boolean {
    if (attempt.aborted) return false;
    this.#observe(written.spec ?? {}, this.#deps.clock.monotonic());
    this.#deps.fence.extend(started, this.#deps.renewDeadlineMs);
    this.#lastError = "";
    return true;
  }

  /** The spec we write: ours from now, keeping acquireTime and transitions while we hold it. */
  #spec(nowMs: number, old: LeaseSpec | undefined): LeaseSpec {
    const { identity, leaseDurationMs } = this.#deps;
    const ours = old?.holderIdentity === identity;
    const transitions = old?.leaseTransitions ?? 0;
    return {
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
      acquireTime: ours && old?.acquireTime ? old.acquireTime : formatMicroTime(nowMs),
      renewTime: formatMicroTime(nowMs),
      leaseTransitions: ours || old === undefined ? transitions : transitions + 1,
    };
  }

  /** Notes the record and, if it changed, when (monotonic ms) we saw it change. */
  #observe(spec: LeaseSpec, nowMono: number): void {
    const json = JSON.stringify(spec);
    if (json === this.#observedJson) return;
    const before = this.#observed?.holderIdentity ?? "";
    this.#observed = spec;
    this.#observedJson = json;
    this.#observedAtMono = nowMono;
    const holder = spec.holderIdentity ?? "";
    if (holder !== before) {
      this.#deps.log.info("leader is now {holder}", { holder: holder || "nobody" });
      this.#deps.onNewLeader?.(holder);
    }
  }

  /** Gives the lease up (client-go `release`): holder cleared, duration 1 s. */
  async #release(): Promise<void> {
    const { leases, clock, namespace, name, identity, log } = this.#deps;
    const timeout = this.#timeout(undefined, this.#deps.renewDeadlineMs);
    try {
      const lease = await leases.get(namespace, name, { signal: timeout.signal });
      if (lease.spec?.holderIdentity !== identity) return;
      const nowMs = clock.now();
      await leases.update({
        ...lease,
        spec: {
          ...lease.spec,
          holderIdentity: "",
          leaseDurationSeconds: 1,
          renewTime: formatMicroTime(nowMs),
          acquireTime: formatMicroTime(nowMs),
        },
      }, { signal: timeout.signal });
      log.info("released the lease {lease}", { lease: this.#leaseName });
    } catch (err) {
      log.warn("could not release the lease {lease}; the standby takes it when it expires: {err}", {
        lease: this.#leaseName,
        err,
      });
    } finally {
      timeout.done();
    }
  }

  /** A signal that aborts with `outer` or after `ms`, whichever comes first. */
  #timeout(outer: AbortSignal | undefined, ms: number): { signal: AbortSignal; done: () => void } {
    const controller = new AbortController();
    const finished = new AbortController();
    this.#deps.clock.sleep(ms, finished.signal).then(
      () =>
        controller.abort(
          new Error(`lease request timed out after ${ms} ms (the renew deadline or the fence)`),
        ),
      () => {},
    );
    const signal = outer ? AbortSignal.any([outer, controller.signal]) : controller.signal;
    return { signal, done: () => finished.abort() };
  }

  #warnOnce(err: unknown): void {
    const message = err instanceof Error ? err.message : String(err);
    if (message === this.#lastError) return;
    this.#lastError = message;
    // NodeRestriction lets a node identity use its own node's Lease and no other.
    const hint = isForbidden(err)
      ? "; --leader-elect needs get, create and update on this Lease: run the replicas as a " +
        "ServiceAccount bound to the roles of deploy/kubernetes/ha/rbac.yaml, not as system:node:<name>"
      : "";
    this.#deps.log.warn("lease {lease}: {err}{hint}", {
      lease: this.#leaseName,
      err: message,
      hint,
    });
  }
}
