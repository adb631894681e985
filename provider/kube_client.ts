/**
 * What a provider may ask of vkubelet's Kubernetes client (`ProviderDeps.kube`): read and watch
 * the ConfigMaps and Secrets its pods use, ask for service-account tokens (TokenRequest) and
 * record events on pods — the calls a kubelet makes under the Node authorizer, and those the
 * built-in providers make.
 *
 * It is an interface of plain methods, not the client's class: `KubeClient` from `k8s/`
 * satisfies it by shape, so a provider loaded by path or URL, with its own copy of this module
 * and of `k8s/`, gets a typed client and never needs `instanceof` or a cast from `unknown`.
 * For the same reason {@link isKubeNotFound} tells a 404 apart by the error's name and code, not
 * by its class.
 * @module
 */
import type { TokenRequest } from "kubernetes-types/authentication/v1.d.ts";
import type {
  ConfigMap,
  Event,
  PersistentVolume,
  PersistentVolumeClaim,
  Secret,
  Service,
  ServiceAccount,
} from "kubernetes-types/core/v1.d.ts";
import type {
  InformerHandlers,
  InNamespace,
  KubeObject,
  ListOptions,
  ListResult,
  ResourceInformerOptions,
  ResumableWatchOptions,
  WatchEvent,
} from "../k8s/api_types.ts";
import type { SignalOptions } from "../base/options.ts";

/** A list+watch cache: handlers get adds, updates and deletes once `run` is called. */
export interface ProviderInformer<T> {
  /** Resolves after the first full list has been delivered. */
  readonly synced: Promise<void>;
  /** Adds a handler; returns a function that removes it. */
  on<K extends keyof InformerHandlers<T>>(event: K, handler: InformerHandlers<T>[K]): () => void;
  /** Lists, then watches (relisting on 410) until `signal` aborts. */
  run(signal: AbortSignal): Promise<void>;
}

/** Reads of one namespaced kind. Errors are the client's (see {@link isKubeNotFound}). */
export interface ProviderObjectApi<T extends KubeObject> {
  /** One object; rejects with a 404 error when it does not exist. */
  get(namespace: string, name: string, options?: SignalOptions): Promise<T>;
  /** Objects in one namespace (or all), one page when `limit` is set. */
  list(options?: InNamespace<ListOptions>): Promise<ListResult<T>>;
  /** Watch events, resumed after disconnects; throws on 410 Gone (relist then). */
  watch(options?: InNamespace<ResumableWatchOptions>): AsyncIterable<WatchEvent<T>>;
  /** A list+watch cache, e.g. of one object by `fieldSelector: metadata.name=<name>`. */
  informer(options?: ResourceInformerOptions<T>): ProviderInformer<T>;
}

/**
 * PersistentVolumes (cluster-scoped). A node may `get` those bound to its pods' claims; `create`
 * and `delete` need rights beyond a kubelet's (the kubernetes provider's upstream provisioner).
 */
export interface ProviderPersistentVolumesApi {
  /** One PersistentVolume; rejects with a 404 error when it does not exist. */
  get(name: string, options?: SignalOptions): Promise<PersistentVolume>;
  /** Creates the PersistentVolume. */
  create(volume: PersistentVolume, options?: SignalOptions): Promise<PersistentVolume>;
  /** Deletes it, only while it still has `preconditions.uid` when given. */
  delete(
    name: string,
    options?: { preconditions?: { uid?: string } } & SignalOptions,
  ): Promise<unknown>;
}

/** Service accounts: the TokenRequest subresource, and reading one (its annotations). */
export interface ProviderServiceAccountsApi {
  /**
   * One ServiceAccount; rejects with a 404 error when it does not exist. Needs `get` on
   * `serviceaccounts`, which neither the Node authorizer nor vkubelet's own ClusterRole grants:
   * a provider that reads them says so in its README.
   */
  get?(namespace: string, name: string, options?: SignalOptions): Promise<ServiceAccount>;
  /** Issues a token for the service account (`POST .../serviceaccounts/<name>/token`). */
  createToken(
    namespace: string,
    name: string,
    request: TokenRequest,
    options?: SignalOptions,
  ): Promise<TokenRequest>;
}

/**
 * Events: a provider says what it changed or saw on a pod; create one, or merge-patch its
 * count and times (as a kubelet's recorder does).
 */
export interface ProviderEventsApi {
  /** Creates the Event in `namespace`. */
  create(namespace: string, event: Event, options?: SignalOptions): Promise<Event>;
  /** Merge-patches the Event `namespace/name` (`type: "merge"`, `body` the patch). */
  patch(
    namespace: string,
    name: string,
    options: { type: "merge"; body: unknown } & SignalOptions,
  ): Promise<Event>;
}

/**
 * vkubelet's client of the cluster the virtual node is in, as a provider sees it. A node's
 * credentials may read only the ConfigMaps and Secrets its pods refer to (watch them by name).
 */
export interface ProviderKubeClient {
  /** ConfigMaps, read by name (the pods' own). */
  configMaps: ProviderObjectApi<ConfigMap>;
  /** Secrets, read by name (the pods' own). */
  secrets: ProviderObjectApi<Secret>;
  /** Service account tokens for the pods' projected volumes. */
  serviceAccounts: ProviderServiceAccountsApi;
  /** Services (a kubelet reads them all for service links); optional. */
  services?: ProviderObjectApi<Service>;
  /** Events on the node's pods (the kubelet's right under the Node authorizer); optional. */
  events?: ProviderEventsApi;
  /** PersistentVolumeClaims (a node reads those its pods use); optional. */
  persistentVolumeClaims?: ProviderObjectApi<PersistentVolumeClaim>;
  /** PersistentVolumes (a node reads those of its pods' claims); optional. */
  persistentVolumes?: ProviderPersistentVolumesApi;
}

/** True when a {@link ProviderKubeClient} call failed because the object does not exist. */
export { isKubeNotFound } from "../k8s/errors.ts";
