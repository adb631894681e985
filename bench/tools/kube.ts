/**
 * A minimal Kubernetes REST client for the bench driver and the floor: `fetch` with a client
 * certificate, JSON in and out, a bounded pool for many concurrent requests, and a pod watch as
 * an async iterable. Deliberately independent of vkubelet's `k8s/` so the driver is identical
 * for every subject.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";

/** PEM contents a client needs. */
export interface Credentials {
  server: string;
  ca: string;
  cert: string;
  key: string;
}

/** A failed API call, with its HTTP status. */
export class KubeError extends Error {
  override name = "KubeError";
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

/** One watch event. */
export interface WatchEvent<T> {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: T;
}

/** A JSON client for one identity. */
export class Kube {
  readonly server: string;
  #client: Deno.HttpClient;
  /** Requests sent, by "VERB resource" (the caller's own count, for cross-checks). */
  readonly sent = new Map<string, number>();

  constructor(creds: Credentials) {
    this.server = creds.server;
    this.#client = Deno.createHttpClient({
      caCerts: [creds.ca],
      cert: creds.cert,
      key: creds.key,
      poolMaxIdlePerHost: 64,
    });
  }

  /** Sends one request; resolves to the parsed JSON body, rejects with KubeError on >= 400. */
  async request<T = unknown>(
    method: string,
    path: string,
    options: { body?: unknown; contentType?: string; signal?: AbortSignal } = {},
  ): Promise<T> {
    const key = `${method} ${path.split("?")[0].split("/").filter((p) => !/\d/.test(p)).pop()}`;
    this.sent.set(key, (this.sent.get(key) ?? 0) + 1);
    const res = await fetch(this.server + path, {
      method,
      client: this.#client,
      signal: options.signal,
      headers: {
        accept: "application/json",
        ...(options.body === undefined
          ? {}
          : { "content-type": options.contentType ?? "application/json" }),
      },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    const text = await res.text();
    if (!res.ok) throw new KubeError(res.status, `${method} ${path}: ${res.status} ${text}`);
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /** Raw text GET (for /metrics). */
  async text(path: string, signal?: AbortSignal): Promise<string> {
    const res = await fetch(this.server + path, { client: this.#client, signal });
    const text = await res.text();
    if (!res.ok) throw new KubeError(res.status, `GET ${path}: ${res.status} ${text}`);
    return text;
  }

  /** Watches pods (`query` without `watch=1`) until `signal` aborts or the server ends it. */
  async *watchPods(
    ns: string,
    query: string,
    signal: AbortSignal,
  ): AsyncGenerator<WatchEvent<Pod>> {
    const path = `/api/v1/namespaces/${ns}/pods?watch=1&allowWatchBookmarks=true&${query}`;
    this.sent.set("WATCH pods", (this.sent.get("WATCH pods") ?? 0) + 1);
    const res = await fetch(this.server + path, { client: this.#client, signal });
    if (!res.ok || !res.body) throw new KubeError(res.status, `watch pods: ${await res.text()}`);
    const decoder = new TextDecoder();
    let buffer = "";
    // An abort does not always end a body read that is waiting for the next chunk; cancel it.
    const reader = res.body.getReader();
    const cancel = () => reader.cancel().catch(() => {});
    signal.addEventListener("abort", cancel, { once: true });
    try {
      while (true) {
        const { done, value: chunk } = await reader.read();
        if (done) break;
        buffer += decoder.decode(chunk, { stream: true });
        let nl: number;
        while ((nl = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          if (line.trim()) yield JSON.parse(line);
        }
      }
    } catch (err) {
      if (!signal.aborted) throw err;
    } finally {
      signal.removeEventListener("abort", cancel);
    }
  }

  /** Releases the connection pool. */
  close(): void {
    this.#client.close();
  }
}

/** Runs `task` for every item with at most `limit` in flight; collects the first error. */
export async function pool<T>(
  items: readonly T[],
  limit: number,
  task: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failure: unknown;
  const worker = async () => {
    while (next < items.length && failure === undefined) {
      const i = next++;
      try {
        await task(items[i], i);
      } catch (err) {
        failure ??= err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure !== undefined) throw failure;
}

/** Reads the PEM files of a client identity. */
export async function readCredentials(
  server: string,
  files: { ca: string; cert: string; key: string },
): Promise<Credentials> {
  const [ca, cert, key] = await Promise.all(
    [files.ca, files.cert, files.key].map((f) => Deno.readTextFile(f)),
  );
  return { server, ca, cert, key };
}
