/**
 * The long-running loops of a running vkubelet (kubelet API, node, pods, metrics listener):
 * one that ends or fails before the stop signal stops all of them, as virtual-kubelet's
 * `nodeutil.Node.Run` does when any controller ends; and the drain that waits for them to stop.
 * @module
 */
import type { Clock } from "../../base/clock.ts";
import { getLogger, type Logger } from "../../base/log.ts";

/** A loop ended by itself or failed after start; everything else was stopped in order. */
export class LoopFailedError extends Error {
  override name = "LoopFailedError";
}

/**
 * The running loops. One that ends or fails before the stop signal stops the others: its
 * cause is logged once and kept in {@link failure}.
 */
export class Loops {
  readonly all: Loop[] = [];
  failure?: LoopFailedError;

  constructor(
    private readonly stop: AbortController,
    private readonly log: Logger,
  ) {}

  /** Tracks a started loop. */
  add(name: string, done: Promise<void>): void {
    const ended = (err?: unknown) => {
      if (this.stop.signal.aborted) {
        if (err !== undefined) throw err; // Failed while stopping: drain logs it.
        return;
      }
      const why = err === undefined
        ? "stopped on its own"
        : `failed: ${err instanceof Error ? err.message : String(err)}`;
      this.failure ??= new LoopFailedError(`${name} ${why}; vkubelet shut down`, { cause: err });
      this.log.error("{loop} {why}; shutting down", { loop: name, why });
      this.stop.abort(this.failure);
    };
    this.all.push({ name, done: done.then(() => ended(), (err) => ended(err ?? "no reason")) });
  }
}

/** A long-running part, named so that a slow shutdown can say who is slow. */
export interface Loop {
  name: string;
  done: Promise<void>;
}

/** Waits for every loop to finish, but no longer than `timeoutMs`. */
export async function drain(loops: Loop[], timeoutMs: number, clock: Clock): Promise<void> {
  const log = getLogger(["vkubelet"]);
  const giveUp = new AbortController();
  const timeout = clock.sleep(timeoutMs, giveUp.signal).then(
    () => "timeout" as const,
    () => "done" as const,
  );
  const pending = new Set(loops.map((l) => l.name));
  const settled = Promise.all(loops.map(async ({ name, done }) => {
    try {
      await done;
    } catch (err) {
      log.error("{loop} failed while stopping: {err}", { loop: name, err });
    } finally {
      pending.delete(name);
    }
  })).then(() => "done" as const);
  const outcome = await Promise.race([settled, timeout]);
  giveUp.abort();
  if (outcome === "timeout") {
    log.warn("gave up waiting for {loops} to stop after {ms} ms", {
      loops: [...pending].join(", "),
      ms: timeoutMs,
    });
  }
}
