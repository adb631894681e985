/**
 * Port-forward over a SPDY session (`portforward.k8s.io`), as the kubelet serves it
 * (cri-streaming `portforward/httpstream.go : httpStreamReceived, getStreamPair,
 * monitorStreamPair, portForward`; client client-go `tools/portforward/portforward.go :
 * handleConnection`): per forwarded connection the client opens an `error` and a `data` stream
 * with the same `port` and `requestid` headers; both are paired, then handed to a handler.
 * @module
 */
import { type Clock, realClock } from "../../../base/clock.ts";
import { deadline } from "../../../base/deadline.ts";
import type { SpdySession } from "../../../spdy/session.ts";
import type { SpdyStream } from "../../../spdy/stream.ts";
import { headerValue } from "../../../spdy/headers.ts";

/** The two streams of one forwarded connection. */
export interface PortForwardPair {
  port: number;
  requestId: string;
  /** Copy bytes both ways on this one; `closeWrite()`/`writable.close()` when the pod side ends. */
  data: SpdyStream;
  /** Only written to by {@link servePortForward}, with an error message. */
  error: SpdyStream;
}

/** Forwards one connection; resolves when done, rejects to report an error to the client. */
export type PortForwardHandler = (
  pair: PortForwardPair,
  options: { signal: AbortSignal },
) => Promise<void>;

/** Options for {@link servePortForward}. */
export interface PortForwardOptions {
  /** How long a pair may stay incomplete; default 30 s. */
  timeoutMs?: number;
  /** Names the pod in error messages, e.g. `ns/name, uid 1234`. */
  podDescription?: string;
  signal?: AbortSignal;
  clock?: Clock;
}

interface PendingPair {
  port: number;
  data?: SpdyStream;
  error?: SpdyStream;
  expire: { signal: AbortSignal; cancel(): void };
}

/** Reads the `port` header; undefined unless it is an integer from 1 to 65535. */
export function parsePortHeader(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d{1,5}$/.test(value)) return undefined;
  const port = Number(value);
  return port >= 1 && port <= 65535 ? port : undefined;
}

/**
 * Serves pairs until the session closes or the signal aborts (then closes the session), and
 * resolves after every handler has finished. Invalid streams (no valid `port`, `streamtype`
 * not error/data) are reset; a pair incomplete after the timeout gets "timed out waiting for
 * streams" on its error stream. A handler that rejects gets `error forwarding port …` written to
 * the error stream and its data stream reset; one that resolves gets FIN on both.
 */
export async function servePortForward(
  session: SpdySession,
  handler: PortForwardHandler,
  options: PortForwardOptions = {},
): Promise<void> {
  const clock = options.clock ?? realClock;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const pending = new Map<string, PendingPair>();
  const running = new Set<Promise<void>>();
  const stop = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
  const onAbort = () => session.close();
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    for (;;) {
      const stream = await session.accept({ signal });
      if (!stream) break;
      const port = parsePortHeader(headerValue(stream.headers, "port"));
      const type = headerValue(stream.headers, "streamtype");
      if (port === undefined || (type !== "error" && type !== "data")) {
        stream.reset();
        continue;
      }
      await stream.reply();
      // Ancient clients sent no requestid: derive it from the error stream's id (data is id+2).
      const requestId = headerValue(stream.headers, "requestid") ??
        String(type === "error" ? stream.id : stream.id - 2);
      let pair = pending.get(requestId);
      if (!pair) {
        pair = { port, expire: deadline(clock, timeoutMs, signal) };
        pending.set(requestId, pair);
        const expiring = pair;
        expiring.expire.signal.addEventListener("abort", () => {
          if (pending.get(requestId) !== expiring) return;
          pending.delete(requestId);
          failPair(expiring, "timed out waiting for streams");
        }, { once: true });
      }
      if (pair[type]) {
        stream.reset();
        continue;
      }
      pair[type] = stream;
      if (!pair.data || !pair.error) continue;
      pending.delete(requestId);
      pair.expire.cancel();
      const complete = { port, requestId, data: pair.data, error: pair.error };
      const task = runPair(complete, handler, signal, options.podDescription);
      running.add(task);
      task.finally(() => running.delete(task));
    }
  } finally {
    signal.removeEventListener("abort", onAbort);
    for (const pair of pending.values()) pair.expire.cancel();
    stop.abort();
    await Promise.all(running);
  }
}

async function runPair(
  pair: PortForwardPair,
  handler: PortForwardHandler,
  signal: AbortSignal,
  podDescription = "the pod",
): Promise<void> {
  const ended = new AbortController();
  const pairSignal = AbortSignal.any([signal, ended.signal]);
  pair.data.closed.then(() => ended.abort());
  try {
    await handler(pair, { signal: pairSignal });
    await pair.data.closeWrite().catch(() => {});
    await pair.error.closeWrite().catch(() => {});
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    await failPair(pair, `error forwarding port ${pair.port} to pod ${podDescription}: ${message}`);
  } finally {
    ended.abort();
  }
}

async function failPair(
  pair: { data?: SpdyStream; error?: SpdyStream },
  message: string,
): Promise<void> {
  pair.data?.reset();
  if (!pair.error) return;
  const writer = pair.error.writable.getWriter();
  try {
    await writer.write(new TextEncoder().encode(message));
    await writer.close();
  } catch {
    pair.error.reset();
  } finally {
    writer.releaseLock();
  }
}
