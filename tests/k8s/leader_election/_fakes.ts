/**
 * Fakes for the leader elector's tests: one in-memory Lease with the apiserver's optimistic
 * concurrency (resourceVersion, 409 on a stale write), replicas on a shared {@link FakeClock}
 * each with a wall clock of its own (so one replica's wall clock can be stepped), and calls that
 * fail (a partition) or are slow on demand.
 * @module
 */
import type { Lease } from "kubernetes-types/coordination/v1.d.ts";
import type { Clock } from "../../../base/clock.ts";
import { getLogger } from "../../../base/log.ts";
import { KubeApiError } from "../../../k8s/mod.ts";
import {
  LeaderElector,
  LeadershipFence,
  type LeaseStore,
} from "../../../k8s/leader_election/mod.ts";
import { type FakeClock, flush } from "../../fakes/clock.ts";

/** How one replica's Lease calls behave; read at each call. */
export interface Link {
  /** Calls fail at once (a partition). */
  down?: boolean;
  /**
   * A GET answers after this many ms, with the Lease as it is then, even if its signal aborted
   * meanwhile (0: at once).
   */
  getDelayMs?: number;
  /** Calls answer only when their signal aborts (a hung connection). */
  hang?: boolean;
  /** Filled with when (monotonic ms) the signal of a request still waiting for its answer aborted. */
  abortedAt?: number[];
}

/** One Lease, shared by the replicas. */
export class MemoryLeases {
  lease?: Lease;
  #version = 0;
  writes: string[] = [];

  storeFor(who: string, clock: Clock, link: Link = {}): LeaseStore {
    const fail = (method: string, code: number, reason: string) =>
      new KubeApiError(code, { method, path: "/leases", status: { reason, message: reason } });
    const call = async <T>(
      signal: AbortSignal | undefined,
      answer: () => T | Promise<T>,
    ): Promise<T> => {
      const onAbort = () => link.abortedAt?.push(clock.monotonic());
      signal?.addEventListener("abort", onAbort, { once: true });
      try {
        if (link.down) throw new Error("connection refused");
        if (link.hang) {
          return await new Promise<never>((_, reject) =>
            signal?.addEventListener("abort", () => reject(signal.reason), { once: true })
          );
        }
        return await answer();
      } finally {
        signal?.removeEventListener("abort", onAbort);
      }
    };
    return {
      get: (_ns, _name, options) =>
        call(options?.signal, async () => {
          // A slow apiserver answers late, whatever the request's signal says.
          if (link.getDelayMs) await clock.sleep(link.getDelayMs);
          if (!this.lease) throw fail("GET", 404, "NotFound");
          return structuredClone(this.lease);
        }),
      create: (_ns, lease, options) =>
        call(options?.signal, () => {
          if (this.lease) throw fail("POST", 409, "AlreadyExists");
          return this.#write(who, lease);
        }),
      update: (lease, options) =>
        call(options?.signal, () => {
          if (lease.metadata?.resourceVersion !== this.lease?.metadata?.resourceVersion) {
            throw fail("PUT", 409, "Conflict");
          }
          return this.#write(who, lease);
        }),
    };
  }

  #write(who: string, lease: Lease): Lease {
    this.writes.push(who);
    this.lease = {
      ...structuredClone(lease),
      metadata: { ...lease.metadata, resourceVersion: String(++this.#version) },
    };
    return structuredClone(this.lease);
  }

  get holder(): string {
    return this.lease?.spec?.holderIdentity ?? "";
  }
}

/** A replica's view of the shared clock: the same monotonic time, a wall clock it can step. */
export class ReplicaClock implements Clock {
  readonly #clock: FakeClock;
  #wallOffset = 0;

  constructor(clock: FakeClock) {
    this.#clock = clock;
  }

  now(): number {
    return this.#clock.now() + this.#wallOffset;
  }

  monotonic(): number {
    return this.#clock.monotonic();
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.#clock.sleep(ms, signal);
  }

  /** Steps this replica's wall clock by `ms` (NTP, an operator). */
  stepWall(ms: number): void {
    this.#wallOffset += ms;
  }
}

/** One replica under test. */
export interface Replica {
  elector: LeaderElector;
  fence: LeadershipFence;
  clock: ReplicaClock;
  link: Link;
  stop: AbortController;
  done: Promise<void>;
  terms: number;
  termEnded: number;
}

/** Options of {@link replica}. */
export interface ReplicaOptions {
  link?: Link;
  /** The term's work; default: runs until the term's signal aborts. */
  work?: () => Promise<void>;
}

/** Starts a replica; lease 8 s, renew deadline 6 s, retry period 1 s. */
export function replica(
  shared: FakeClock,
  leases: MemoryLeases,
  identity: string,
  options: ReplicaOptions = {},
): Replica {
  const clock = new ReplicaClock(shared);
  const fence = new LeadershipFence(clock);
  const stop = new AbortController();
  const link = options.link ?? {};
  const r = { fence, clock, link, stop, terms: 0, termEnded: 0 } as Replica;
  r.elector = new LeaderElector({
    leases: leases.storeFor(identity, clock, link),
    clock,
    log: getLogger(["test"]),
    fence,
    namespace: "kube-node-lease",
    name: "vkubelet-n",
    identity,
    leaseDurationMs: 8_000,
    renewDeadlineMs: 6_000,
    retryPeriodMs: 1_000,
    onStartedLeading: (signal) => {
      r.terms++;
      if (options.work) return options.work();
      return new Promise((resolve) =>
        signal.addEventListener("abort", () => {
          r.termEnded++;
          resolve();
        }, { once: true })
      );
    },
  });
  r.done = r.elector.run(stop.signal);
  return r;
}

/** Stops the replicas and waits for them. */
export async function stopAll(clock: FakeClock, ...replicas: Replica[]): Promise<void> {
  for (const r of replicas) r.stop.abort();
  await flush();
  await clock.advance(0);
  await Promise.all(replicas.map((r) => r.done));
}

/**
 * Advances `ms` in steps of `stepMs` and returns the first moment (ms from now) when both
 * replicas' fences were open — two writers — or undefined if that never happened.
 */
export async function twoWriters(
  clock: FakeClock,
  a: Replica,
  b: Replica,
  ms: number,
  stepMs = 250,
): Promise<number | undefined> {
  let seen: number | undefined;
  for (let t = 0; t < ms; t += stepMs) {
    if (seen === undefined && a.fence.open && b.fence.open) seen = t;
    await clock.advance(stepMs);
  }
  return seen;
}
