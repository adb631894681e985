/**
 * The state the pod controller's workers share: caches, queues and collaborators. Built by
 * {@link PodController}; the sync functions in `pod_sync.ts` and `status_sync.ts` take it.
 * @module
 */
import type { ProviderReachability } from "./outage.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { Clock } from "../../base/clock.ts";
import type { Logger } from "../../base/log.ts";
import type { Provider } from "../../provider/mod.ts";
import type { SharedParts } from "../../k8s/watch/intern.ts";
import type { InformerLike, PodControllerApi } from "./api.ts";
import type { ConfigSources } from "./config_sources.ts";
import type { EnvSources, PodAddresses } from "./env.ts";
import type { EventRecorder } from "./events.ts";
import type { PodStates } from "./pod_state.ts";
import type { WorkQueue } from "./work_queue.ts";
import type { Tracer } from "../tracing.ts";

/** What to do with pods a DaemonSet puts on this node. */
export type DaemonSetPodPolicy = "run" | "skip";

/** Shared by the sync and status workers. */
export interface PodContext {
  api: PodControllerApi;
  provider: Provider;
  clock: Clock;
  log: Logger;
  pods: InformerLike<Pod>;
  recorder: EventRecorder;
  configSources: ConfigSources;
  envSources: EnvSources;
  /** Shares the resolved specs' equal parts between pods (env.ts). */
  resolvedParts: SharedParts;
  daemonSetPods: DaemonSetPodPolicy;
  /** The node's IPs, for status.hostIP(s) when the provider reports none. */
  nodeIps(): string[];
  /** One record per pod key; `states.forget(key)` is the one place a pod is forgotten. */
  states: PodStates;
  syncQueue: WorkQueue;
  statusQueue: WorkQueue;
  /** The pod and host IPs for env resolution, from the provider's report when there is one. */
  addresses(key: string, pod: Pod): PodAddresses;
  /**
   * Removes a deleting pod's object once its containers have stopped: the status queue's workers
   * write the provider's last status (best effort), then delete the object with grace 0 — once
   * per uid, however often a sync asks.
   */
  removeObject(pod: Pod): void;
  /** Spans for each pod's sync, provider calls and status writes (`pod_traces.ts`); none when off. */
  tracer?: Tracer;
  /** Told, once per pod, how long it took from first seeing it to writing it Running. */
  onPodStarted?: (seconds: number) => void;
  /** Whether the provider reaches its backend (`outage.ts`); default always. */
  reachability?: ProviderReachability;
}
