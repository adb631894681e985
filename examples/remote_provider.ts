/**
 * A remote provider on the kit's {@link RemotePods}: the backend is a toy "cloud" that keeps
 * runs in memory (stand in your API client), and the provider is only what is the backend's own —
 * list this node's runs, read one, make, remove. RemotePods adopts, polls, restarts with the
 * kubelet's back-off and pushes status; `docs/writing-a-provider.md` walks through it, and
 * `tests/examples/remote_provider_test.ts` runs the conformance suite against it.
 *
 * `ToyCloud` is shared by every instance in one process, as a real cloud outlives vkubelet:
 * a restarted provider adopts the runs its node made, and another node never lists them.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type Provider,
  type ProviderDeps,
  type RemoteBackend,
  RemotePods,
  type RemoteRun,
} from "../provider/mod.ts";

/** One run in the toy cloud: the pod it runs and the node that made it. */
interface ToyRun {
  pod: Pod;
  node: string;
  startedAtMs: number;
}

/** A stand-in for a cloud API: runs by pod uid; every container runs until the run is removed. */
export class ToyCloud {
  readonly runs: Map<string, ToyRun> = new Map();
}

/** The toy cloud as a {@link RemoteBackend} for one node. */
class ToyBackend implements RemoteBackend {
  constructor(
    readonly cloud: ToyCloud,
    readonly node: string,
    readonly now: () => number,
  ) {}

  list(): Promise<RemoteRun[]> {
    const mine = [...this.cloud.runs.values()].filter((r) => r.node === this.node);
    return Promise.resolve(mine.map((r) => this.#asRun(r)));
  }

  read(pod: Pod): Promise<RemoteRun | undefined> {
    const run = this.cloud.runs.get(pod.metadata?.uid ?? "");
    return Promise.resolve(run && this.#asRun(run));
  }

  make(pod: Pod): Promise<void> {
    const { status: _, ...spec } = structuredClone(pod);
    this.cloud.runs.set(pod.metadata?.uid ?? "", {
      pod: spec,
      node: this.node,
      startedAtMs: this.now(),
    });
    return Promise.resolve();
  }

  remove(pod: Pod): Promise<void> {
    this.cloud.runs.delete(pod.metadata?.uid ?? "");
    return Promise.resolve();
  }

  #asRun(run: ToyRun): RemoteRun {
    const containers = Object.fromEntries(
      (run.pod.spec?.containers ?? []).map((c) => [c.name, {
        state: { running: { startedAtMs: run.startedAtMs } },
      }]),
    );
    return { pod: run.pod, containers, podIP: "127.0.0.2" };
  }
}

/** The provider's config: how often the cloud is read. */
export interface ToyConfig {
  cloud: ToyCloud;
  statusIntervalMs?: number;
}

/** vkubelet calls this with the provider's config and its dependencies. */
export function createProvider(config: ToyConfig, deps: ProviderDeps): Provider {
  const pods = new RemotePods({
    backend: new ToyBackend(config.cloud, deps.nodeName, () => deps.clock.now()),
    clock: deps.clock,
    log: deps.log,
    intervalMs: config.statusIntervalMs ?? 1_000,
    hostIP: deps.internalIp,
  });
  const stop = new AbortController();
  const running = pods.run(AbortSignal.any([stop.signal, deps.signal]));
  return {
    createPod: (pod, options) => pods.createPod(pod, options),
    updatePod: (pod, options) => pods.updatePod(pod, options),
    deletePod: (pod, options) => pods.deletePod(pod, options),
    getPod: (namespace, name, options) => pods.getPod(namespace, name, options),
    listPods: (options) => pods.listPods(options),
    notifyPods: (callback) => pods.notifyPods(callback),
    // Closing stops the loop, never the pods: they run on in the cloud.
    async close() {
      stop.abort();
      await running;
    },
  };
}
