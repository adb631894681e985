/**
 * The node and lease calls of many nodes, on a heartbeat client of their own and at most
 * `concurrency` at a time. The kubelet does the same: its node status and lease go through
 * `heartbeatClient`, a client without a QPS limit (kubernetes/kubernetes cmd/kubelet/app/server.go
 * `heartbeatClientConfig.QPS = float32(-1)`), so that a storm of pod status writes waiting on
 * the main client's limiter never delays a lease. With 1,000 nodes renewing every 10 s the
 * bound keeps a burst of renewals from opening 1,000 requests at once.
 * @module
 */
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
