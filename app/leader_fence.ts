/**
 * The fence of leader election: a replica may write to the cluster and act on the provider only
 * while its last successful lease renewal is younger than the renew deadline. The check is a
 * comparison with the clock made at the moment of each write, not a timer, so a process that
 * was paused (SIGSTOP, a long GC, a frozen VM) past its lease writes nothing when it wakes up,
 * before its elector has even noticed: every apiserver write goes through
 * {@link LeadershipFence.guardRequest} (the client's `beforeSend`) and every create, update or
 * delete in the provider through {@link fenceProvider}.
 * @module
 */
import type { Clock } from "../base/clock.ts";
import type { Provider } from "../provider/mod.ts";

/** Thrown instead of a write by a replica that does not (or no longer surely) lead. */
export class NotLeaderError extends Error {
  override name = "NotLeaderError";
}

/** True for the error {@link LeadershipFence} throws. */
export function isNotLeader(err: unknown): err is NotLeaderError {
  return err instanceof NotLeaderError;
}

/** Methods that only read; everything else is a write and needs the lease. */
const READS = new Set(["GET", "HEAD"]);

/** Whether this replica may write now; see the module doc. */
export class LeadershipFence {
  readonly #clock: Clock;
  /** Writes are allowed before this time (ms since the epoch); 0 = never. */
  #until = 0;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** True while writes are allowed. */
  get open(): boolean {
    return this.#clock.now() < this.#until;
  }

  /** Allows writes until `untilMs` (a renewal's start plus the renew deadline). */
  extend(untilMs: number): void {
    this.#until = untilMs;
  }

  /** Stops writes at once (leadership lost or given up). */
  close(): void {
    this.#until = 0;
  }

  /** Throws {@link NotLeaderError} unless writes are allowed; `what` names the write. */
  check(what: string): void {
    if (this.open) return;
    throw new NotLeaderError(
      `${what} refused: this replica does not hold the leader lease (it is a standby, or could not renew within the renew deadline)`,
    );
  }

  /** For `KubeClientOptions.beforeSend`: reads pass, writes need the lease. */
  readonly guardRequest = (request: { method: string; path: string }): void => {
    if (!READS.has(request.method)) this.check(`${request.method} ${request.path}`);
  };
}

/** The provider calls that change what runs; the rest only read. */
const ACTIONS = new Set(["createPod", "updatePod", "deletePod"]);

/** `provider` with createPod, updatePod and deletePod refused while `fence` is closed. */
export function fenceProvider(provider: Provider, fence: LeadershipFence): Provider {
  return new Proxy(provider, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      if (typeof property === "string" && ACTIONS.has(property)) {
        return (...args: unknown[]) => {
          try {
            fence.check(`provider.${property}`);
          } catch (err) {
            return Promise.reject(err);
          }
          return value.apply(target, args);
        };
      }
      return value.bind(target);
    },
  });
}
