/**
 * `kubectl logs` through `/getLogs`: every option of the kubelet's goes into interLink's
 * `ContainerLogOpts` (tail, since, timestamps, limitBytes, previous). interLink's API server
 * refuses Tail together with LimitBytes (pkg/interlink/api/logs.go, interlink-hq/interLink commit
 * f632175701d78b604138ce2e1e38af13d1f7546b), so the byte limit is always applied here too.
 * `follow` is done by polling: plugins' own follow support varies, and a poll needs nothing of
 * the plugin but what a plain log read does.
 * @module
 */
import { Buffer } from "node:buffer";
import type { ContainerLogOptions } from "../../provider/mod.ts";
import type { InterlinkApi } from "./api.ts";
import { GO_ZERO_TIME, type LogStruct } from "./wire.ts";

/** Who the log is of, and how to read it. */
export interface LogTarget {
  api: InterlinkApi;
  namespace: string;
  pod: string;
  uid: string;
  container: string;
  /** Now (clock ms), to fix `sinceSeconds` for follow polls. */
  now: () => number;
  /** Sleeps between follow polls. */
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** How often a follow polls, ms. */
  pollMs: number;
  /** `target: interlink` refuses tail with a byte limit. */
  interlink: boolean;
}

/** The log as a stream; see the module doc. */
export async function readLog(
  target: LogTarget,
  options: ContainerLogOptions,
): Promise<ReadableStream<Uint8Array>> {
  const request = logStruct(target, options, false);
  if (target.interlink && request.Opts.Tail > 0) request.Opts.Bytes = 0;
  const first = await fetchLog(target, request, options.signal);
  const limit = options.limitBytes ?? Infinity;
  if (!options.follow) {
    return ReadableStream.from([first.subarray(0, Math.min(first.length, limit))]);
  }
  // Follow: the first read honours tail and since; later reads ask for everything since the
  // same instant and send what follows what was already seen.
  const since = sinceTimeOf(target, options);
  const whole = {
    ...logStruct(target, options, true),
    Opts: { ...request.Opts, Tail: 0, Bytes: 0 },
  };
  whole.Opts.SinceSeconds = 0;
  whole.Opts.SinceTime = since ?? GO_ZERO_TIME;
  let seen = (await fetchLog(target, whole, options.signal)).length;
  let sent = 0;
  const signal = options.signal;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const chunk = first.subarray(0, Math.min(first.length, limit));
      sent += chunk.length;
      if (chunk.length) controller.enqueue(chunk);
      if (sent >= limit) controller.close();
    },
    async pull(controller) {
      while (!signal?.aborted && sent < limit) {
        await target.sleep(target.pollMs, signal).catch(() => {});
        if (signal?.aborted) break;
        const text = await fetchLog(target, whole, signal).catch(() => undefined);
        if (!text) continue;
        const fresh = text.length >= seen ? text.subarray(seen) : text;
        seen = text.length;
        if (fresh.length === 0) continue;
        const out = fresh.subarray(0, Math.min(fresh.length, limit - sent));
        sent += out.length;
        controller.enqueue(out);
        return;
      }
      controller.close();
    },
  });
}

function logStruct(target: LogTarget, o: ContainerLogOptions, follow: boolean): LogStruct {
  return {
    Namespace: target.namespace,
    PodUID: target.uid,
    PodName: target.pod,
    ContainerName: target.container,
    Opts: {
      Tail: o.tailLines ?? 0,
      Bytes: o.limitBytes ?? 0,
      Timestamps: o.timestamps ?? false,
      Follow: follow && false, // never asked of the plugin: polled instead
      Previous: o.previous ?? false,
      SinceSeconds: o.sinceSeconds ?? 0,
      SinceTime: o.sinceTime ? o.sinceTime.toISOString() : GO_ZERO_TIME,
    },
  };
}

function sinceTimeOf(target: LogTarget, o: ContainerLogOptions): string | undefined {
  if (o.sinceTime) return o.sinceTime.toISOString();
  if (o.sinceSeconds) return new Date(target.now() - o.sinceSeconds * 1000).toISOString();
  return undefined;
}

async function fetchLog(
  target: LogTarget,
  request: LogStruct,
  signal?: AbortSignal,
): Promise<Uint8Array> {
  return new Uint8Array(Buffer.from(await target.api.logs(request, signal), "utf8"));
}
