/**
 * The node and lease calls of many nodes, on a heartbeat client of their own and at most
 * `concurrency` at a time. The kubelet does the same: its node status and lease go through
 * `heartbeatClient`, a client without a QPS limit (kubernetes/kubernetes cmd/kubelet/app/server.go
 * `heartbeatClientConfig.QPS = float32(-1)`), so that a storm of pod status writes waiting on
 * the main client's limiter never delays a lease. With 1,000 nodes renewing every 10 s the
 * bound keeps a burst of renewals from opening 1,000 requests at once.
 *
 * The periodic status check of every node reads its Node from one watch of the virtual nodes
 * ({@link cachedNodeReads}) instead of a GET each: the kubelet reads the apiserver's watch cache
 * (`resourceVersion=0`) every 10 s, which for 1,000 nodes is 100 requests a second that a
 * watch the process keeps anyway answers from memory, with the same freshness.
 * @module
 */
import type { Node } from "kubernetes-types/core/v1.d.ts";
import { type NodeApi, type NodeApiClient, nodeApiFromClient } from "../core/node/mod.ts";

/** A counting semaphore: `run` waits for a free slot. */
export class Gate {
  #free: number;
  #waiting: (() => void)[] = [];

  constructor(concurrency: number) {
    if (!(concurrency >= 1)) {
      throw new RangeError(`gate concurrency must be at least 1, got ${concurrency}`);
    }
    this.#free = concurrency;
  }

  /** Calls waiting for a slot now. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** Runs `call` once a slot is free; frees it when the call settles. */
  async run<T>(call: () => Promise<T>): Promise<T> {
    if (this.#free > 0) this.#free--;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await call();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free++;
    }
  }
}

/** {@link NodeApi} on `client`, every call through `gate`. */
export function gatedNodeApi(client: NodeApiClient, gate: Gate): NodeApi {
  const api = nodeApiFromClient(client);
  const gated = {} as Record<string, unknown>;
  for (const name of Object.keys(api) as (keyof NodeApi)[]) {
    const call = api[name] as (...args: unknown[]) => Promise<unknown>;
    gated[name] = (...args: unknown[]) => gate.run(() => call.apply(api, args));
  }
  return gated as unknown as NodeApi;
}

/** The node cache {@link cachedNodeReads} reads (an informer of Nodes): its store, once synced. */
export interface NodeCache {
  readonly isSynced: boolean;
  readonly store: { getByKey(name: string): Node | undefined };
}

/**
 * `api` with its cached reads (`getNode(name, { cached: true })`, the periodic status check)
 * answered from `cache` once it has synced. A node the cache does not hold is read from the
 * apiserver as before, so a Node that was deleted (404, registered again) or that lost the
 * cache's label is still seen as it is.
 */
export function cachedNodeReads(api: NodeApi, cache: NodeCache): NodeApi {
  return {
    ...api,
    getNode(name, options = {}) {
      const node = options.cached && cache.isSynced ? cache.store.getByKey(name) : undefined;
      return node ? Promise.resolve(node) : api.getNode(name, options);
    },
  };
}
