/**
 * The typed helpers a kubelet needs, grouped by kind, all on one {@link KubeRequester}.
 * @module
 */
import type { TokenRequest, TokenReview } from "kubernetes-types/authentication/v1.d.ts";
import type { SubjectAccessReview } from "kubernetes-types/authorization/v1.d.ts";
import type { Lease, LeaseList } from "kubernetes-types/coordination/v1.d.ts";
import type {
  ConfigMap,
  ConfigMapList,
  Event,
  EventList,
  Namespace,
  NamespaceList,
  Node,
  NodeList,
  PersistentVolume,
  PersistentVolumeClaim,
  PersistentVolumeClaimList,
  PersistentVolumeList,
  Pod,
  PodList,
  Secret,
  SecretList,
  Service,
  ServiceAccount,
  ServiceAccountList,
  ServiceList,
} from "kubernetes-types/core/v1.d.ts";
import type { KubeRequester } from "../request.ts";
import { CertificateSigningRequestsApi } from "./certificates.ts";
import type { WriteOptions } from "./resource.ts";
import { ClusterApi, NamespacedApi } from "./scoped.ts";

/** Service accounts, plus the TokenRequest subresource. */
export class ServiceAccountsApi extends NamespacedApi<ServiceAccount, ServiceAccountList> {
  /** Issues a token for the service account (`POST .../serviceaccounts/<name>/token`). */
  createToken(
    namespace: string,
    name: string,
    request: TokenRequest,
    options: WriteOptions = {},
  ): Promise<TokenRequest> {
    return this.requester.request<TokenRequest>({
      method: "POST",
      path: this.path(namespace, name, "token"),
      body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", ...request },
      signal: options.signal,
    });
  }
}

/** A create-only review API (TokenReview, SubjectAccessReview). */
export class ReviewApi<T> {
  #requester: KubeRequester;
  #path: string;
  #apiVersion: string;
  #kind: string;

  constructor(requester: KubeRequester, path: string, apiVersion: string, kind: string) {
    this.#requester = requester;
    this.#path = path;
    this.#apiVersion = apiVersion;
    this.#kind = kind;
  }

  /** Asks the apiserver to review; the answer is in `status`. */
  create(review: T, options: { signal?: AbortSignal } = {}): Promise<T> {
    return this.#requester.request<T>({
      method: "POST",
      path: this.#path,
      body: { apiVersion: this.#apiVersion, kind: this.#kind, ...review },
      signal: options.signal,
    });
  }
}

/** Every typed helper on one client. */
export interface KubeApis {
  pods: NamespacedApi<Pod, PodList>;
  nodes: ClusterApi<Node, NodeList>;
  leases: NamespacedApi<Lease, LeaseList>;
  /** core/v1 Events, as the kubelet's event recorder writes them (create; patch for series). */
  events: NamespacedApi<Event, EventList>;
  configMaps: NamespacedApi<ConfigMap, ConfigMapList>;
  secrets: NamespacedApi<Secret, SecretList>;
  services: NamespacedApi<Service, ServiceList>;
  /** PersistentVolumeClaims; a node may read those its pods use (the Node authorizer's graph). */
  persistentVolumeClaims: NamespacedApi<PersistentVolumeClaim, PersistentVolumeClaimList>;
  /** PersistentVolumes; a node may read those of its pods' claims (the Node authorizer's graph). */
  persistentVolumes: ClusterApi<PersistentVolume, PersistentVolumeList>;
  namespaces: ClusterApi<Namespace, NamespaceList>;
  serviceAccounts: ServiceAccountsApi;
  tokenReviews: ReviewApi<TokenReview>;
  subjectAccessReviews: ReviewApi<SubjectAccessReview>;
  csrs: CertificateSigningRequestsApi;
}

/** Requesters for some helpers other than the main one. */
export interface CreateApisOptions {
  /** For `events`, e.g. one with a client-side limit of its own (the kubelet's event client). */
  events?: KubeRequester;
}

/** Builds every typed helper on a requester (a `KubeClient`, or a fake in tests). */
export function createApis(requester: KubeRequester, options: CreateApisOptions = {}): KubeApis {
  const core = (plural: string) => ({ group: "", version: "v1", plural });
  return {
    pods: new NamespacedApi(requester, core("pods")),
    nodes: new ClusterApi(requester, core("nodes")),
    leases: new NamespacedApi(requester, {
      group: "coordination.k8s.io",
      version: "v1",
      plural: "leases",
    }),
    events: new NamespacedApi(options.events ?? requester, core("events")),
    configMaps: new NamespacedApi(requester, core("configmaps")),
    secrets: new NamespacedApi(requester, core("secrets")),
    services: new NamespacedApi(requester, core("services")),
    persistentVolumeClaims: new NamespacedApi(requester, core("persistentvolumeclaims")),
    persistentVolumes: new ClusterApi(requester, core("persistentvolumes")),
    namespaces: new ClusterApi(requester, core("namespaces")),
    serviceAccounts: new ServiceAccountsApi(requester, core("serviceaccounts")),
    tokenReviews: new ReviewApi(
      requester,
      "/apis/authentication.k8s.io/v1/tokenreviews",
      "authentication.k8s.io/v1",
      "TokenReview",
    ),
    subjectAccessReviews: new ReviewApi(
      requester,
      "/apis/authorization.k8s.io/v1/subjectaccessreviews",
      "authorization.k8s.io/v1",
      "SubjectAccessReview",
    ),
    csrs: new CertificateSigningRequestsApi(requester, {
      group: "certificates.k8s.io",
      version: "v1",
      plural: "certificatesigningrequests",
    }),
  };
}
