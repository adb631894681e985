/**
 * The state the pod controller's workers share: caches, queues and collaborators. Built by
 * {@link PodController}; the sync functions in `pod_sync.ts` and `status_sync.ts` take it.
 * @module
 */
import type { Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import type { Clock } from "../../base/clock.ts";
import type { Logger } from "../../base/log.ts";
import type { Provider } from "../../provider/mod.ts";
import type { InformerLike, PodControllerApi } from "./api.ts";
import type { ConfigSources } from "./config_sources.ts";
import type { EnvSources, PodAddresses } from "./env.ts";
import type { EventRecorder } from "./events.ts";
import type { WorkQueue } from "./work_queue.ts";

/** What to do with pods a DaemonSet puts on this node. */
export type DaemonSetPodPolicy = "run" | "skip";

/** A status with the pod uid it belongs to. */
export interface UidStatus {
  uid: string;
  status: PodStatus;
}

/** What the status worker remembers of its last write for a key. */
export interface StatusMemo {
  desired: PodStatus;
  hostIps: string;
  basedOn?: string;
  written?: string;
}

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
  daemonSetPods: DaemonSetPodPolicy;
  /** The node's IPs, for status.hostIP(s) when the provider reports none. */
  nodeIps(): string[];
  /** The last API copy seen per key, to stop a pod in the provider after its object is gone. */
  lastKnown: Map<string, Pod>;
  /** The provider's latest status per key (from notifyPods or polling). */
  providerStatus: Map<string, UidStatus>;
  /** Statuses the controller decided itself (config error, provider failure), per key. */
  localStatus: Map<string, UidStatus>;
  /**
   * Per key, the status the status worker last wrote or found written: the desired status object,
   * the node IPs, and the resourceVersions it holds at (`written`) and was written over
   * (`basedOn`: the informer may not have seen our write yet). See `status_sync.ts`.
   */
  statusWritten: Map<string, StatusMemo>;
  /**
   * Per key, the resourceVersion of the pod as the provider last ran it (after a create, an
   * update, or a check that found nothing to change). The resync skips a pod whose version is
   * unchanged and which the provider still lists with its uid.
   */
  syncedVersion: Map<string, string>;
  /** Status syncs in progress per key, so the final write before a delete waits its turn. */
  statusInFlight: Map<string, Promise<void>>;
  /** Deleting pods by uid: when first seen deleting, and whether the provider was told. */
  deleting: Map<string, { firstSeen: number; providerTold: boolean }>;
  syncQueue: WorkQueue;
  statusQueue: WorkQueue;
  /** The pod and host IPs for env resolution, from the provider's report when there is one. */
  addresses(key: string, pod: Pod): PodAddresses;
  /** Records a controller-decided status and queues it to be written. */
  setLocalStatus(pod: Pod, status: PodStatus): void;
  /** Deleting pods whose object is to be removed, by key (see {@link PodContext.removeObject}). */
  removals: Map<string, Pod>;
  /**
   * Removes a deleting pod's object once its containers have stopped: the status queue's workers
   * write the provider's last status (best effort), then delete the object with grace 0.
   */
  removeObject(pod: Pod): void;
}
