/**
 * What the pod controller knows of each pod, one record per key in one map, forgotten in one
 * place — as virtual-kubelet keeps one `knownPod` per pod (node/podcontroller.go). Records are
 * created only for pods the informer holds; everything that learns something about a pod that
 * has no record (a late provider report, a status write finishing after the pod went) drops it,
 * so nothing outlives a deleted pod.
 * @module
 */
import type { Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import type { TraceContext } from "../tracing.ts";

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

/** The progress of a deleting pod (one uid). */
export interface Deletion {
  uid: string;
  /** When the controller first saw the pod deleting (clock ms); its grace period runs from here. */
  firstSeen: number;
  /** The provider was asked to stop the pod. */
  providerTold: boolean;
  /** The object is to be removed (grace 0, uid precondition) by the status queue. */
  removal?: Pod;
  /** The object was removed (or found gone): no second DELETE for this uid. */
  removed: boolean;
}

/** One pod's state; see the module doc. */
export interface PodState {
  /** The last API copy seen, to stop the pod in the provider after its object is gone. */
  lastKnown?: Pod;
  /** The provider's latest status (from notifyPods or polling). */
  providerStatus?: UidStatus;
  /** A status the controller decided itself (config error, provider failure): `controller_status.ts`. */
  localStatus?: UidStatus;
  /**
   * The status the status worker last wrote or found written: the desired status object, the
   * node IPs, and the resourceVersions it holds at (`written`) and was written over (`basedOn`:
   * the informer may not have seen our write yet). See `status_sync.ts`.
   */
  statusWritten?: StatusMemo;
  /**
   * The resourceVersion of the pod as the provider last ran it (after a create, an update, or a
   * check that found nothing to change). The resync skips a pod whose version is unchanged and
   * which the provider still lists with its uid.
   */
  syncedVersion?: string;
  /** The status sync in progress, so the final write before a delete waits its turn. */
  statusInFlight?: Promise<void>;
  /** The next status sync asks the provider first (providers without `notifyPods`). */
  pollDue?: boolean;
  /** Set once the pod has a deletionTimestamp. */
  deletion?: Deletion;
  /** When the controller first saw the pod (clock ms), for `kubelet_pod_start_duration_seconds`. */
  firstSeen?: number;
  /** The trace of the last informer event that set work going (with tracing on). */
  trace?: TraceContext;
  /** The `pod.sync` span in progress, the parent of provider calls (with tracing on). */
  syncTrace?: TraceContext;
  /**
   * Ephemeral containers of this uid the provider cannot run (name → image): reported waiting
   * in every status of the pod until it is deleted (`ephemeral.ts`).
   */
  ephemeralWaiting?: { uid: string; names: Map<string, string> };
}

/** Options for {@link PodStates}. */
export interface PodStatesOptions {
  /** Told after a key was forgotten: release what others hold for it (watches, timers). */
  onForget?: (key: string) => void;
}

/** The pod controller's records, by pod key (`namespace/name`). */
export class PodStates {
  #states = new Map<string, PodState>();
  #onForget?: (key: string) => void;

  constructor(options: PodStatesOptions = {}) {
    this.#onForget = options.onForget;
  }

  /** Records held; 0 once every pod the controller saw is gone and forgotten. */
  get size(): number {
    return this.#states.size;
  }

  /** The keys with a record. */
  keys(): string[] {
    return [...this.#states.keys()];
  }

  /** The record of `key`, or undefined if the controller holds none. */
  get(key: string): PodState | undefined {
    return this.#states.get(key);
  }

  /** The record of `key`, created empty if there is none: only for pods the informer holds. */
  ensure(key: string): PodState {
    let state = this.#states.get(key);
    if (!state) {
      state = {};
      this.#states.set(key, state);
    }
    return state;
  }

  /** Drops everything known of `key`: its API object is gone and the provider no longer runs it. */
  forget(key: string): void {
    this.#states.delete(key);
    this.#onForget?.(key);
  }
}
