/**
 * A remote provider on the kit's {@link RemotePodsProvider}: the backend is a toy "cloud" that
 * keeps runs in memory (stand in your API client), and the provider is only what is the backend's
 * own — list this node's runs, read one, make, remove. The kit adopts, polls, restarts with the
 * kubelet's back-off, pushes status and answers the pod calls; `docs/writing-a-provider.md` walks
 * through it, and `tests/examples/remote_provider_test.ts` runs the conformance suite against it.
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
  RemotePodsProvider,
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

/**
 * The toy cloud's provider: the kit answers the pod calls and close, which stops the loop, never
 * the pods (they run on in the cloud); a real one adds its node, ping, logs and exec.
 */
class ToyProvider extends RemotePodsProvider implements Provider {
  constructor(config: ToyConfig, deps: ProviderDeps) {
    super(deps, () => ({
      backend: new ToyBackend(config.cloud, deps.nodeName, () => deps.clock.now()),
      intervalMs: config.statusIntervalMs ?? 1_000,
    }));
  }
}

/** vkubelet calls this with the provider's config and its dependencies. */
export function createProvider(config: ToyConfig, deps: ProviderDeps): Provider {
  return new ToyProvider(config, deps);
}
