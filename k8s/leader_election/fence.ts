/**
 * The fence of leader election: a replica may write to the cluster, act on the provider and let
 * the provider write to its own backends only while its last successful lease renewal is younger
 * than the renew deadline. The check is a comparison with the clock made at the moment of each
 * write, not a timer, so a process that was paused (SIGSTOP, a long GC, a frozen VM) past its
 * lease writes nothing when it wakes up, before its elector has even noticed: every apiserver
 * write goes through {@link LeadershipFence.guardRequest} (the client's `beforeSend`), every
 * create, update or delete in the provider through `fenceProvider` (app/), and the provider's own
 * clients through the same fence (`ProviderDeps.fence`).
 *
 * The deadline is kept on both clocks, and a write needs both to agree that it has not passed:
 * the monotonic one (`performance.now()`), which an NTP or operator step of the wall clock does
 * not move, and the wall one, which keeps counting while a VM or laptop is suspended (Linux's
 * `CLOCK_MONOTONIC` stops then). A step of the wall clock backwards cannot keep the fence open;
 * a step forwards closes it early, which is safe (the elector renews and opens it again).
 * @module
 */
import type { Clock } from "../../base/clock.ts";

/** Thrown instead of a write by a replica that does not (or no longer surely) lead. */
export class NotLeaderError extends Error {
  override name = "NotLeaderError";
}

/** True for the error {@link LeadershipFence} throws. */
export function isNotLeader(err: unknown): err is NotLeaderError {
  return err instanceof NotLeaderError;
}

/** Both clocks read at one moment: where a renewal started. */
export interface FenceMark {
  /** `clock.now()` */
  wall: number;
  /** `clock.monotonic()` */
  mono: number;
}

/** Methods that only read; everything else is a write and needs the lease. */
const READS = new Set(["GET", "HEAD"]);

/**
 * Whether this replica may write now; see the module doc. It is the provider kit's `WriteFence`
 * (by shape: this library does not import the kit).
 */
export class LeadershipFence {
  readonly #clock: Clock;
  /** Writes are allowed before these times (wall: ms since the epoch; mono: monotonic ms). */
  #until: FenceMark = { wall: 0, mono: -Infinity };

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** True while writes are allowed: neither clock has reached the deadline. */
  get open(): boolean {
    return this.remainingMs > 0;
  }

  /** How long writes stay allowed by the clock that ends first (ms); 0 or less when closed. */
  get remainingMs(): number {
    return Math.min(
      this.#until.wall - this.#clock.now(),
      this.#until.mono - this.#clock.monotonic(),
    );
  }

  /** Both clocks now, to be handed to {@link extend} once a renewal that started now worked. */
  mark(): FenceMark {
    return { wall: this.#clock.now(), mono: this.#clock.monotonic() };
  }

  /** Allows writes until `ms` after `from` (a renewal's start), by both clocks. */
  extend(from: FenceMark, ms: number): void {
    this.#until = { wall: from.wall + ms, mono: from.mono + ms };
  }

  /** Stops writes at once (leadership lost or given up). */
  close(): void {
    this.#until = { wall: 0, mono: -Infinity };
  }

  /**
   * Resolves with true once the fence is closed — by a timer at its monotonic deadline, moved
   * on by each {@link extend} — or with false when `signal` aborts first.
   */
  async closed(signal: AbortSignal): Promise<boolean> {
    while (!signal.aborted) {
      if (!this.open) return true;
      const left = this.#until.mono - this.#clock.monotonic();
      if (!await this.#clock.sleep(left, signal).then(() => true, () => false)) return false;
    }
    return false;
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
