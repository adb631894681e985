/**
 * Pods on the virtual node: the {@link PodController} that runs the pods bound to this node in
 * the provider and writes their status back, with the pieces it is built from — a keyed
 * {@link WorkQueue}, environment resolution as the kubelet does it ({@link resolvePodEnv}:
 * `$(VAR)` expansion, ConfigMaps, Secrets, the downward API, resources, service links), per-name
 * watches of referenced ConfigMaps and Secrets ({@link ConfigSources}) and an
 * {@link EventRecorder}. The read-only caches it works from are {@link PodCaches}, which a
 * `--leader-elect` standby runs from start-up and hands to each term's controller.
 *
 * ```ts
 * const pods = new PodController({ api: kube, provider, clock: realClock, log, nodeName });
 * const running = pods.run(signal);
 * await pods.ready;
 * ```
 * @module
 */
export { PodController, type PodControllerDeps } from "./pod_controller.ts";
export { PodCaches, type PodCachesDeps } from "./pod_caches.ts";
export type { DaemonSetPodPolicy } from "./pod_context.ts";
export * from "./api.ts";
export { WorkQueue, type WorkQueueOptions } from "./work_queue.ts";
export {
  type EnvEvent,
  EnvResolutionError,
  type EnvSources,
  isEnvResolutionError,
  type PodAddresses,
  type ResolvedEnv,
  resolvePodEnv,
  type ResourceList,
} from "./env.ts";
export { expandVars } from "./expansion.ts";
export { ConfigSources, type ConfigSourcesOptions, envReferences } from "./config_sources.ts";
export { EventRecorder, type EventRecorderOptions, type PodEvent } from "./events.ts";
export { SharedPodInformer, type SharedPodInformerDeps } from "./shared_pods.ts";
