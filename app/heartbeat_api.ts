/**
 * The node and lease calls of many nodes, on a heartbeat client of their own and at most
 * `concurrency` at a time. The kubelet does the same: its node status and lease go through
 * `heartbeatClient`, a client without a QPS limit (kubernetes/kubernetes cmd/kubelet/app/server.go
 * `heartbeatClientConfig.QPS = float32(-1)`), so that a storm of pod status writes waiting on
 * the main client's limiter never delays a lease. With 1,000 nodes renewing every 10 s the
 * bound keeps a burst of renewals from opening 1,000 requests at once.
 *
 * The bound is a {@link Gate} the node and lease controllers wait at (`CallSlots`), not a
 * wrapper of the API: each call's deadline starts when it gets its slot, and lease calls take a
 * free slot before node status calls. One kubelet has one lease and nothing to queue behind; a
 * process of 1,000 nodes renews 100 leases a second, and while 10,000 pods are created the
 * apiserver answers slowly enough that status writes queued with the renewals used to make them
 * miss their 10 s deadline, and the retries of the missed ones queue again (measured in
 * docs/multinode.md).
 *
 * The periodic status check of every node reads its Node from one watch of the virtual nodes
 * ({@link cachedNodeReads}) instead of a GET each: the kubelet reads the apiserver's watch cache
 * (`resourceVersion=0`) every 10 s, which for 1,000 nodes is 100 requests a second that a
 * watch the process keeps anyway answers from memory, with the same freshness.
 * @module
 */
import type { Node } from "kubernetes-types/core/v1.d.ts";
import type { CallSlots, NodeApi } from "../core/node/mod.ts";

/**
 * A counting semaphore with two lines: urgent calls (lease renewals) take a free slot before any
 * other waiting call does. A call whose signal aborts while it waits leaves the line unrun.
 */
export class Gate implements CallSlots {
  #free: number;
  #urgent: Waiter[] = [];
  #rest: Waiter[] = [];

  constructor(concurrency: number) {
    if (!(concurrency >= 1)) {
      throw new RangeError(`gate concurrency must be at least 1, got ${concurrency}`);
    }
    this.#free = concurrency;
  }

  /** Calls waiting for a slot now. */
  get waiting(): number {
    return this.#urgent.length + this.#rest.length;
  }

  /** Runs `call` once a slot is free; frees it when the call settles. */
  async run<T>(
    call: () => Promise<T>,
    options: { signal?: AbortSignal; urgent?: boolean } = {},
  ): Promise<T> {
    const { signal } = options;
    signal?.throwIfAborted();
    if (this.#free > 0) this.#free--;
    else await this.#wait(options.urgent ? this.#urgent : this.#rest, signal);
    try {
      return await call();
    } finally {
      const next = this.#urgent.shift() ?? this.#rest.shift();
      if (next) next.resolve();
      else this.#free++;
    }
  }

  #wait(line: Waiter[], signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (!signal) {
        line.push({ resolve });
        return;
      }
      const onAbort = () => {
        const at = line.indexOf(waiter);
        if (at >= 0) line.splice(at, 1);
        reject(signal.reason);
      };
      const waiter: Waiter = {
        resolve: () => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      signal.addEventListener("abort", onAbort, { once: true });
      line.push(waiter);
    });
  }
}

interface Waiter {
  resolve(): void;
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
