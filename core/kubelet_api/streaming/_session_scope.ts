/**
 * The life of one streaming session: one signal that aborts on server shutdown, on the idle
 * timeout or when the connection goes away, with the reason the client will be told.
 * @module
 */
import type { Clock } from "../../../base/clock.ts";
import { IdleWatch } from "./_idle.ts";

/** Aborts with a reason when the server stops, the session idles, or the peer leaves. */
export class SessionScope {
  readonly #abort = new AbortController();
  readonly #idle: IdleWatch;
  readonly #parent: AbortSignal;
  readonly #onParent = () => this.abort("the kubelet API server is shutting down");

  constructor(clock: Clock, idleTimeoutMs: number, parent: AbortSignal) {
    this.#parent = parent;
    this.#idle = new IdleWatch(clock, idleTimeoutMs, () => {
      this.abort(`stream idle timeout: no data for ${idleTimeoutMs / 1000}s`);
    });
    if (parent.aborted) this.#onParent();
    else parent.addEventListener("abort", this.#onParent, { once: true });
  }

  /** Aborts when the session must end; `reason` is an Error with the message for the client. */
  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  /** Records activity (resets the idle timeout). */
  readonly touch = (): void => this.#idle.touch();

  /** Ends the session with `message` as the reason. */
  abort(message: string): void {
    if (!this.#abort.signal.aborted) this.#abort.abort(new Error(message));
  }

  /** Releases the timer and listeners. */
  dispose(): void {
    this.#idle.stop();
    this.#parent.removeEventListener("abort", this.#onParent);
  }
}
