/**
 * The pod calls of a provider whose pods live on a remote backend, answered once: a provider that
 * keeps its pods in {@link RemotePods} extends {@link RemotePodsProvider} and writes only what is
 * its own (node, ping, logs, exec, stats, close), instead of six calls that only pass through.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { CallOptions, Provider } from "./contract.ts";
import type { RemotePods } from "./remote_pods.ts";

/** The pod lifecycle part of {@link Provider}, answered by the subclass's `pods`. */
export type RemotePodCalls = Pick<
  Provider,
  "createPod" | "updatePod" | "deletePod" | "getPod" | "listPods" | "notifyPods"
>;

/**
 * createPod, updatePod, deletePod, getPod, listPods and notifyPods, answered by `pods` (set in the
 * subclass's constructor); a subclass overrides one only to add to it.
 *
 * @example Usage
 * ```ts ignore
 * class CloudProvider extends RemotePodsProvider<Task> implements Provider {
 *   protected readonly pods: RemotePods<Task>;
 *   constructor(backend: RemoteBackend<Task>, deps: ProviderDeps) {
 *     super();
 *     this.pods = new RemotePods({ backend, clock: deps.clock, log: deps.log, intervalMs: 5_000 });
 *   }
 * }
 * ```
 */
export abstract class RemotePodsProvider<H = unknown> implements RemotePodCalls {
  /** The pods and their runs; the kit adopts, polls, restarts and notifies. */
  protected abstract readonly pods: RemotePods<H>;

  createPod(pod: Pod, options: CallOptions): Promise<void> {
    return this.pods.createPod(pod, options);
  }

  updatePod(pod: Pod, options: CallOptions): Promise<void> {
    return this.pods.updatePod(pod, options);
  }

  deletePod(pod: Pod, options: CallOptions): Promise<void> {
    return this.pods.deletePod(pod, options);
  }

  getPod(namespace: string, name: string, options: CallOptions): Promise<Pod | undefined> {
    return this.pods.getPod(namespace, name, options);
  }

  listPods(options: CallOptions): Promise<Pod[]> {
    return this.pods.listPods(options);
  }

  notifyPods(callback: (pod: Pod) => void): () => void {
    return this.pods.notifyPods(callback);
  }
}
