/**
 * Scenario 2, the settle step between scenario 1 and scenario 3: after all pods are Running, wait until the
 * kubelet's own request rate has fallen to a kubelet's idle rate, so that the steady state is
 * measured after the creation transient (for vkubelet, its event backlog: two events per pod at
 * the kubelet's `--event-qps` 50/s) rather than during it. The wait itself is reported.
 * @module
 */

/** How often the kubelet's request count is sampled. */
export const SETTLE_SAMPLE_MS = 5_000;
/** The window the rule counts requests over, in samples: 10 s. */
export const SETTLE_WINDOW_SAMPLES = 2;
/**
 * Most requests in the window for a kubelet to count as idle: an idle kubelet renews its Lease
 * every 10 s and writes its node status about once a minute, so a quiet 10 s holds a few at most.
 */
export const SETTLE_IDLE_REQUESTS = 4;

const WINDOW_SECONDS = SETTLE_WINDOW_SAMPLES * SETTLE_SAMPLE_MS / 1000;

/**
 * The kubelet's requests over the last window, from its cumulative request counts sampled every
 * `SETTLE_SAMPLE_MS` (the first at the start of the wait); undefined until a whole window has
 * been sampled.
 */
export function windowRequests(counts: readonly number[]): number | undefined {
  const last = counts.length - 1;
  if (last < SETTLE_WINDOW_SAMPLES) return undefined;
  return counts[last] - counts[last - SETTLE_WINDOW_SAMPLES];
}

/** Whether the kubelet has settled: at most `SETTLE_IDLE_REQUESTS` in the last whole window. */
export function isSettled(counts: readonly number[]): boolean {
  const recent = windowRequests(counts);
  return recent !== undefined && recent <= SETTLE_IDLE_REQUESTS;
}

/** What the settle step measured. */
export interface Settle {
  /** From the start of the wait (all pods Running) until settled, or until the cap. */
  seconds: number;
  settled: boolean;
  /** The kubelet process's CPU seconds during the wait. */
  cpuSeconds: number;
  /** The kubelet's requests during the wait (apiserver's count). */
  requests: number;
}

/** What the settle wait reads and how it waits; the bench passes the real ones. */
export interface SettleDeps {
  /** The kubelet's cumulative request count (any origin; only differences are used). */
  requests: () => Promise<number>;
  /** The kubelet process's CPU seconds so far. */
  cpuSeconds: () => number;
  /** Milliseconds on a monotonic clock. */
  now: () => number;
  sleep: (ms: number) => Promise<unknown>;
  say: (line: string) => void;
}

/** Waits until the kubelet has settled (see `isSettled`), at most `capMs`. */
export async function waitSettled(deps: SettleDeps, capMs: number): Promise<Settle> {
  const { now, say } = deps;
  const t0 = now();
  const cpu0 = deps.cpuSeconds();
  const counts = [await deps.requests()];
  let settled = false;
  let sampledAt = t0;
  // Samples are due on a fixed grid from t0, so that a slow scrape does not stretch the window.
  for (let k = 1; !settled && k * SETTLE_SAMPLE_MS <= capMs; k++) {
    await deps.sleep(Math.max(0, t0 + k * SETTLE_SAMPLE_MS - now()));
    counts.push(await deps.requests());
    sampledAt = now();
    settled = isSettled(counts);
    const recent = windowRequests(counts);
    if (!settled && recent !== undefined) {
      const s = ((sampledAt - t0) / 1000).toFixed(0);
      say(`settling: kubelet made ${recent} requests in the last ${WINDOW_SECONDS} s after ${s} s`);
    }
  }
  const result: Settle = {
    seconds: (sampledAt - t0) / 1000,
    settled,
    cpuSeconds: deps.cpuSeconds() - cpu0,
    requests: counts[counts.length - 1] - counts[0],
  };
  say(
    settled
      ? `settled after ${result.seconds.toFixed(0)} s (${
        result.cpuSeconds.toFixed(2)
      } CPU s, ${result.requests} requests)`
      : `did not settle within ${result.seconds.toFixed(0)} s (${
        result.cpuSeconds.toFixed(2)
      } CPU s, ${result.requests} requests)`,
  );
  return result;
}
