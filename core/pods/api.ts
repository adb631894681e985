/**
 * The narrow slices of the Kubernetes API the pod controller uses. `KubeClient` from `k8s/`
 * satisfies {@link PodControllerApi} as it is (its `pods`, `configMaps`, `secrets`, `services`
 * and `events` helpers and their informers), and unit tests hand in small fakes.
 *
 * Everything here is what the Node authorizer lets a `system:node:<name>` identity do: pods
 * listed and watched with `spec.nodeName=<node>`, their status written, their objects deleted;
 * ConfigMaps and Secrets read and watched one by one (`metadata.name=<name>`) and only when a pod
 * on this node references them; PersistentVolumeClaims its pods use read (get only); Services
 * listed and watched; Events created and patched.
 * @module
 */
import type {
  ConfigMap,
  Event,
  PersistentVolumeClaim,
  Pod,
  Secret,
  Service,
} from "kubernetes-types/core/v1.d.ts";
import type { Clock } from "../../base/clock.ts";

import type { SignalOptions } from "../../base/options.ts";
export type { SignalOptions };

/** A list+watch cache (k8s/watch/informer.ts `Informer`). */
export interface InformerLike<T> {
  /** Resolves once the first list is cached and its `add` handlers have run. */
  readonly synced: Promise<void>;
  readonly store: { list(): T[]; getByKey(key: string): T | undefined };
  on(event: "add" | "delete", handler: (object: T) => void): () => void;
  on(event: "update", handler: (object: T, old: T) => void): () => void;
  /** Lists and watches until the signal aborts. */
  run(signal: AbortSignal): Promise<void>;
  /**
   * The next version of `object`'s key (one we just wrote) will likely equal it in parts: the
   * cache may keep those parts instead of its own copy (k8s/watch/informer.ts).
   */
  expect?(object: T): void;
}

/** Options for creating an informer. */
export interface InformerOptions {
  namespace?: string;
  fieldSelector?: string;
  clock?: Clock;
  name?: string;
}

/** Options for the pod informer. */
export interface PodInformerOptions extends InformerOptions {
  /**
   * Applied to each pod the cache takes that is new or changed: shares its parts with other
   * pods' equal ones (k8s/watch/intern.ts `internPodParts`).
   */
  intern?: (pod: Pod, previous: Pod | undefined) => Pod;
}

/** Options of a delete. */
export interface DeleteOptions extends SignalOptions {
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
}

/** Pods: read, write status, delete, and an informer. Errors are `KubeApiError`s. */
export interface PodsApi {
  get(namespace: string, name: string, options?: SignalOptions): Promise<Pod>;
  /** PUT pods/status; 409 Conflict when `metadata.resourceVersion` is stale. */
  updateStatus(pod: Pod, options?: SignalOptions): Promise<Pod>;
  delete(namespace: string, name: string, options?: DeleteOptions): Promise<unknown>;
  informer(options: PodInformerOptions): InformerLike<Pod>;
}

/** ConfigMaps or Secrets, one object at a time. */
export interface NamedObjectsApi<T> {
  get(namespace: string, name: string, options?: SignalOptions): Promise<T>;
  /** Used with `fieldSelector: metadata.name=<name>` only. */
  informer(options: InformerOptions): InformerLike<T>;
}

/** Services: an informer over all namespaces (the kubelet keeps the same cache). */
export interface ServicesApi {
  informer(options: InformerOptions): InformerLike<Service>;
}

/** A JSON merge patch. */
export interface MergePatch extends SignalOptions {
  type: "merge";
  body: unknown;
}

/** core/v1 Events, as the kubelet's recorder writes them. */
export interface EventsApi {
  create(namespace: string, event: Event, options?: SignalOptions): Promise<Event>;
  patch(namespace: string, name: string, options: MergePatch): Promise<Event>;
}

/** Everything the pod controller asks of the apiserver. */
export interface PodControllerApi {
  pods: PodsApi;
  configMaps: NamedObjectsApi<ConfigMap>;
  secrets: NamedObjectsApi<Secret>;
  /** Read before a pod with a claim starts, as the kubelet's volume manager reads them. */
  persistentVolumeClaims: {
    get(ns: string, name: string, options?: SignalOptions): Promise<PersistentVolumeClaim>;
  };
  services: ServicesApi;
  events: EventsApi;
}

/** Splits a pod's key (the kit's `podKey`, `namespace/name`). */
export function splitKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf("/");
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
