/**
 * Watches as async iterables.
 *
 * {@link watchEvents} reads one watch connection: newline-delimited JSON events, an ERROR event
 * turned into a thrown `KubeApiError`. {@link resumableWatch} strings connections together the
 * way client-go's reflector does (`tools/cache/reflector.go`, `watch`): bookmarks on, each new
 * connection starts at the last resourceVersion seen, failures back off with jitter, and only a
 * 410 Gone ends the iteration with an error so the caller can relist.
 * @module
 */
import type { Status } from "kubernetes-types/meta/v1.d.ts";
import { jitter, realClock } from "../../base/clock.ts";
import { getLogger } from "../../base/log.ts";
import { isGone, KubeApiError } from "../errors.ts";
import type { KubeRequester, Query } from "../request.ts";
import type { KubeObject, ResumableWatchOptions, WatchEvent } from "../api_types.ts";
export type { KubeObject, ResumableWatchOptions, WatchEvent, WatchOptions } from "../api_types.ts";

const log = getLogger(["vkubelet", "k8s", "watch"]);

/** Yields the events of one watch connection until the apiserver ends it or the signal aborts. */
export async function* watchEvents<T>(
  requester: KubeRequester,
  path: string,
  query: Query,
  signal?: AbortSignal,
): AsyncGenerator<WatchEvent<T>> {
  const body = await requester.request({
    path,
    query: { ...query, watch: true },
    signal,
    stream: true,
  });
  const lines = body.pipeThrough(new TextDecoderStream()).getReader();
  // Once the body streams, aborting the request's signal does not always end a pending read;
  // cancelling the reader does (the read then reports done).
  const onAbort = () => lines.cancel().catch(() => {});
  signal?.addEventListener("abort", onAbort, { once: true });
  let buffered = "";
  try {
    while (true) {
      const { done, value } = await lines.read();
      if (done) break;
      buffered += value;
      let newline: number;
      while ((newline = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        if (line.trim() !== "") yield parseEvent<T>(line, path);
      }
    }
    if (buffered.trim() !== "") yield parseEvent<T>(buffered, path);
  } finally {
    signal?.removeEventListener("abort", onAbort);
    await lines.cancel().catch(() => {});
  }
}

function parseEvent<T>(line: string, path: string): WatchEvent<T> {
  const event = JSON.parse(line) as { type: string; object: unknown };
  if (event.type === "ERROR") {
    const status = event.object as Status;
    throw new KubeApiError(status.code ?? 500, { method: "WATCH", path, status });
  }
  return event as WatchEvent<T>;
}

/**
 * Watches without end: reconnects after every disconnect from the last resourceVersion seen
 * (bookmarks included). Ends quietly when the signal aborts; throws on 410 Gone (relist, then
 * watch again from the list's resourceVersion) and on errors retrying cannot fix (403, 404).
 */
export async function* resumableWatch<T extends KubeObject>(
  requester: KubeRequester,
  path: string,
  options: ResumableWatchOptions = {},
): AsyncGenerator<WatchEvent<T>> {
  const clock = options.clock ?? realClock;
  const initial = options.initialBackoffMs ?? 800;
  const max = options.maxBackoffMs ?? 30_000;
  let resourceVersion = options.resourceVersion;
  let backoff = initial;
  while (!options.signal?.aborted) {
    const started = clock.now();
    let events = 0;
    let healthy: boolean;
    try {
      const query: Query = {
        resourceVersion,
        labelSelector: options.labelSelector,
        fieldSelector: options.fieldSelector,
        allowWatchBookmarks: options.allowWatchBookmarks ?? true,
        timeoutSeconds: options.timeoutSeconds ?? Math.floor(300 * (1 + Math.random())),
      };
      for await (const event of watchEvents<T>(requester, path, query, options.signal)) {
        events++;
        resourceVersion = event.object?.metadata?.resourceVersion ?? resourceVersion;
        yield event;
      }
      healthy = events > 0 || clock.now() - started > 1_000;
    } catch (err) {
      if (options.signal?.aborted) return;
      if (isGone(err) || isPermanent(err)) throw err;
      log.debug("watch {path} broke off; resuming from {resourceVersion}: {err}", {
        path,
        resourceVersion,
        err: (err as Error).message,
      });
      healthy = events > 0;
    }
    if (healthy) {
      backoff = initial;
      continue;
    }
    try {
      await clock.sleep(jitter(backoff, 0.5), options.signal);
    } catch {
      return;
    }
    backoff = Math.min(backoff * 2, max);
  }
}

/** Errors that another attempt will not fix: the caller has to act. */
function isPermanent(err: unknown): boolean {
  if (!(err instanceof KubeApiError)) return false;
  return err.code === 400 || err.code === 401 || err.code === 403 || err.code === 404 ||
    err.code === 405 || err.code === 422;
}
