/**
 * Container logs for the mock: three start-up lines, then one `tick N` line per follow interval
 * since the container started, all timed by the injected clock, so the log is a deterministic
 * function of time. Supports the kubelet's options (kubernetes/kubernetes
 * pkg/kubelet/kuberuntime/logs/logs.go): tailLines, sinceSeconds/sinceTime, timestamps (RFC 3339
 * with nine fractional digits), limitBytes, follow (until the signal aborts, the reader cancels
 * or the pod is deleted) and previous (only after a restart).
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type Clock,
  type ContainerLogOptions,
  formatLogTime,
  InvalidInputError,
} from "../../provider/mod.ts";
import type { ContainerRun } from "./status.ts";

const START_LINES = 3;
const encoder = new TextEncoder();

/** Everything a container's log is computed from. */
export interface LogSource {
  pod: Pod;
  container: string;
  run: ContainerRun;
  clock: Clock;
  followIntervalMs: number;
  /** Aborts when the pod is deleted: a follow stream ends then. */
  stopped: AbortSignal;
}

/** Time of line `index` of a container run. */
function lineTime(source: LogSource, index: number): number {
  const start = source.run.startedAtMs;
  return index < START_LINES ? start : start + (index - START_LINES + 1) * source.followIntervalMs;
}

/** Number of lines written by `nowMs`. */
function lineCount(source: LogSource, nowMs: number): number {
  const elapsed = Math.max(nowMs - source.run.startedAtMs, 0);
  return START_LINES + Math.floor(elapsed / source.followIntervalMs);
}

/** Text of line `index`, without newline. */
export function lineText(source: LogSource, index: number): string {
  const { namespace, name } = source.pod.metadata ?? {};
  const container = [
    ...(source.pod.spec?.initContainers ?? []),
    ...(source.pod.spec?.containers ?? []),
  ]
    .find((c) => c.name === source.container);
  switch (index) {
    case 0:
      return `mock: container ${source.container} of pod ${namespace}/${name} started (image ${source.run.image}, restart ${source.run.restartCount})`;
    case 1: {
      const argv = [...(container?.command ?? []), ...(container?.args ?? [])];
      return `mock: command ${argv.length ? JSON.stringify(argv) : "(image default)"}`;
    }
    case 2:
      return `mock: container ${source.container} is running`;
    default:
      return `mock: tick ${index - START_LINES + 1}`;
  }
}

/** The index of the first line to send, after sinceTime/sinceSeconds and tailLines. */
function firstLine(source: LogSource, options: ContainerLogOptions, count: number): number {
  const now = source.clock.now();
  const since = options.sinceTime?.getTime() ??
    (options.sinceSeconds === undefined ? undefined : now - options.sinceSeconds * 1000);
  let first = 0;
  if (since !== undefined) {
    while (first < count && lineTime(source, first) < since) first++;
  }
  if (options.tailLines !== undefined) first = Math.max(first, count - options.tailLines);
  return first;
}

/** The log stream of one container run; see the module doc for the options honoured. */
export function containerLogStream(
  source: LogSource,
  options: ContainerLogOptions,
): ReadableStream<Uint8Array> {
  if (options.previous) {
    if (source.run.restartCount === 0) {
      throw new InvalidInputError(
        `previous terminated container "${source.container}" in pod "${source.pod.metadata?.name}" not found`,
      );
    }
    source = { ...source, run: { ...source.run, restartCount: source.run.restartCount - 1 } };
  }
  const cancelled = new AbortController();
  const signals = [source.stopped, cancelled.signal, ...(options.signal ? [options.signal] : [])];
  const done = AbortSignal.any(signals);
  // A previous instance's log is just its start-up lines: it ended when the current one began.
  const available = () => options.previous ? START_LINES : lineCount(source, source.clock.now());
  // Without follow the log is what it was when asked for: a line written before the first read
  // (a loaded machine) must not make `--tail=1` send two.
  const atRequest = available();
  const end = () => options.follow ? available() : atRequest;
  let next = firstLine(source, options, atRequest);
  let budget = options.limitBytes ?? Infinity;
  return new ReadableStream<Uint8Array>({
    pull: async (controller) => {
      let count = end();
      while (next >= count && options.follow && !options.previous && !done.aborted) {
        const wait = lineTime(source, next) - source.clock.now();
        try {
          await source.clock.sleep(Math.max(wait, 0), done);
        } catch {
          break; // stopped, cancelled or aborted: end the stream
        }
        count = available();
      }
      if (next >= count || budget <= 0) return controller.close();
      let text = "";
      for (; next < count && text.length < 16_384; next++) {
        const stamp = options.timestamps ? `${formatLogTime(lineTime(source, next))} ` : "";
        text += `${stamp}${lineText(source, next)}\n`;
      }
      let bytes = encoder.encode(text);
      if (bytes.length >= budget) {
        bytes = bytes.subarray(0, budget);
        controller.enqueue(bytes);
        budget = 0;
        return controller.close();
      }
      budget -= bytes.length;
      controller.enqueue(bytes);
    },
    cancel: () => cancelled.abort(),
  });
}
