/**
 * Pieces of start-up and shutdown, and what `runVkubelet` (`mod.ts`) hands the step that serves
 * the nodes (`serve.ts`).
 * @module
 */
import type { Clock } from "../../base/clock.ts";
import type { Logger } from "../../base/log.ts";
import type { LeadershipFence } from "../../k8s/leader_election/mod.ts";
import type { VkubeletMetrics } from "../../core/metrics.ts";
import type { Config } from "../config/config.ts";
import type { NodeEntry } from "../node_set.ts";
import type { Loaded } from "./load.ts";
import type { Loops } from "./loops.ts";
import type { RunDeps } from "./mod.ts";

/**
 * What the common start-up hands the step that serves the nodes: everything loaded, the loops
 * to add to, and `deps.signal`, which aborts when the process stops or a loop fails. The step
 * resolves after that signal aborted (or rejects if start-up failed); `runVkubelet` then drains
 * the loops, runs `atExit` and closes the providers and clients.
 */
export interface ServeContext {
  /** The config with `port` resolved. */
  config: Config;
  deps: RunDeps;
  entries: NodeEntry[];
  loaded: Loaded;
  metrics: VkubeletMetrics;
  fence?: LeadershipFence;
  loops: Loops;
  log: Logger;
  /** Run after the loops drained, before the providers close. */
  atExit: (() => Promise<void> | void)[];
}

/** Thrown when start-up does not finish within `--startup-timeout`. */
export class StartupTimeoutError extends Error {
  override name = "StartupTimeoutError";
}

/**
 * Start-up problems that are the configuration's fault (a kubeconfig or provider config that
 * cannot be used), all of them, found before anything touches the cluster.
 */
export class StartupConfigError extends Error {
  override name = "StartupConfigError";
  /**
   * True when every problem may go away by itself (a port still in use): main.ts exits 1,
   * which a supervisor retries, instead of 2 (a config a restart cannot fix).
   */
  readonly transient: boolean;
  constructor(readonly problems: string[], options: { transient?: boolean } = {}) {
    super(problems.join("; "));
    this.transient = options.transient ?? false;
  }
}

/** Waits for `ready`, but no longer than `--startup-timeout` when one is set. */
export async function withStartupTimeout(
  config: Config,
  clock: Clock,
  ready: Promise<void>,
  what: string,
): Promise<void> {
  if (!config.startupTimeout) return await ready;
  const done = new AbortController();
  const timeout = clock.sleep(config.startupTimeout, done.signal).then(() => {
    throw new StartupTimeoutError(
      `gave up waiting for ${what} after --startup-timeout (${config.startupTimeout} ms); ` +
        "check that the apiserver is reachable and these credentials may register the node",
    );
  }, () => {});
  try {
    await Promise.race([ready, timeout]);
  } finally {
    done.abort();
  }
}

/** A port that was free a moment ago, for `--port 0`. */
export function freePort(hostname: string): number {
  const listener = Deno.listen({ hostname, port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** Resolves when `signal` aborts. */
export function abortion(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
  });
}
