/**
 * The API calls the node and lease controllers make, and nothing else: a narrow interface that
 * unit tests fake and benchmarks wrap to count writes, with {@link nodeApiFromClient} adapting
 * the real client from `k8s/`.
 * @module
 */
import type { Node } from "kubernetes-types/core/v1.d.ts";
import type { Lease } from "kubernetes-types/coordination/v1.d.ts";
import type { Event } from "kubernetes-types/core/v1.d.ts";
import type { KubeClient } from "../../k8s/client.ts";
import { dropManagedFields } from "../../k8s/watch/informer.ts";

/** Every call takes one; the call stops when `signal` aborts. */
export interface ApiCallOptions {
  signal?: AbortSignal;
}

/** Options for {@link NodeApi.getNode}. */
export interface GetNodeOptions extends ApiCallOptions {
  /**
   * Read from the apiserver's watch cache (`resourceVersion=0`) instead of etcd, as the kubelet
   * does for its periodic status check (kubernetes/kubernetes pkg/kubelet/kubelet_node_status.go
   * `tryUpdateNodeStatus`, `util.FromApiserverCache`).
   */
  cached?: boolean;
  /** Keep `metadata.managedFields` (who last set each field; `./cordon.ts` asks). */
  managedFields?: boolean;
}

/**
 * The Node and Lease calls vkubelet's node side needs. Failures throw `KubeApiError` from
 * `k8s/errors.ts` (checked with `isNotFound`, `isConflict`, `isForbidden`...).
 */
export interface NodeApi {
  getNode(name: string, options?: GetNodeOptions): Promise<Node>;
  createNode(node: Node, options?: ApiCallOptions): Promise<Node>;
  /** Strategic merge patch on `nodes/<name>` (spec and metadata: cordon). */
  patchNode(name: string, patch: unknown, options?: ApiCallOptions): Promise<Node>;
  /** Strategic merge patch on `nodes/<name>/status` (status, labels, annotations). */
  patchNodeStatus(name: string, patch: unknown, options?: ApiCallOptions): Promise<Node>;
  getLease(namespace: string, name: string, options?: ApiCallOptions): Promise<Lease>;
  createLease(lease: Lease, options?: ApiCallOptions): Promise<Lease>;
  /** Replaces the lease; fails with 409 Conflict when its resourceVersion is stale. */
  updateLease(lease: Lease, options?: ApiCallOptions): Promise<Lease>;
  /** Records an event on the Node (in `default`, as the kubelet's node events); optional. */
  createEvent?(nodeName: string, event: NodeEvent, options?: ApiCallOptions): Promise<void>;
}

/** An event about the Node itself. */
export interface NodeEvent {
  type: "Normal" | "Warning";
  reason: string;
  message: string;
}

/**
 * Turns for the API calls of many nodes that share one client (`app/heartbeat_api.ts`): a call
 * waits here for its turn, and its deadline starts only once it has one, so that time spent
 * queued behind other nodes' calls never counts against it. Urgent calls (lease renewals) go
 * before the others that wait.
 */
export interface CallSlots {
  /**
   * Runs `call` once a slot is free and frees the slot when it settles. Rejects with the
   * signal's reason, without running `call`, if `signal` aborts while it waits.
   */
  run<T>(call: () => Promise<T>, options: { signal: AbortSignal; urgent?: boolean }): Promise<T>;
}

/** The `fieldManager` vkubelet's writes carry, so `managedFields` name it. */
export const FIELD_MANAGER = "vkubelet";

/** The parts of `KubeClient` the adapter uses. */
export type NodeApiClient =
  & Pick<KubeClient, "request" | "nodes" | "leases">
  & Partial<Pick<KubeClient, "events">>;

/**
 * Adapts the real Kubernetes client to {@link NodeApi}. Nodes and Leases come back without
 * `metadata.managedFields`, as the informers keep them: nothing here reads them, the lease is
 * written back without them, and the controllers keep the last of each (with 1,000 nodes, 1.8
 * copies of about 1.3 KiB a node).
 */
export function nodeApiFromClient(client: NodeApiClient): NodeApi {
  return {
    getNode(name, options = {}) {
      if (options.managedFields) return client.nodes.get(name, { signal: options.signal });
      if (!options.cached) return client.nodes.get(name, { signal: options.signal }).then(lean);
      return client.request<Node>({
        path: client.nodes.path(undefined, name),
        query: { resourceVersion: "0" },
        signal: options.signal,
      }).then(lean);
    },
    createNode: (node, options = {}) => client.nodes.create(node, write(options)).then(lean),
    patchNode: (name, patch, options = {}) =>
      client.nodes.patch(name, { type: "strategic", body: patch, ...write(options) }).then(lean),
    patchNodeStatus: (name, patch, options = {}) =>
      client.nodes.patchStatus(name, { type: "strategic", body: patch, ...write(options) })
        .then(lean),
    getLease: (namespace, name, options = {}) =>
      client.leases.get(namespace, name, { signal: options.signal }).then(lean),
    createLease: (lease, options = {}) =>
      client.leases.create(lease.metadata?.namespace ?? "", lease, write(options)).then(lean),
    updateLease: (lease, options = {}) => client.leases.update(lease, write(options)).then(lean),
    ...(client.events
      ? {
        createEvent: async (nodeName: string, event: NodeEvent, options: ApiCallOptions = {}) => {
          await client.events!.create("default", nodeEvent(nodeName, event, Date.now()), {
            signal: options.signal,
          });
        },
      }
      : {}),
  };
}

/**
 * The Event object for `event` on node `nodeName`. The kubelet refers to its Node with the node's
 * name as uid and files node events in `default` (kubernetes/kubernetes pkg/kubelet/kubelet.go
 * `nodeRef`), so that `kubectl describe node` finds them.
 */
export function nodeEvent(nodeName: string, event: NodeEvent, now: number): Event {
  const timestamp = new Date(Math.floor(now / 1000) * 1000).toISOString().replace(".000Z", "Z");
  return {
    apiVersion: "v1",
    kind: "Event",
    metadata: { name: `${nodeName}.${now.toString(16)}${randomSuffix()}`, namespace: "default" },
    involvedObject: { apiVersion: "v1", kind: "Node", name: nodeName, uid: nodeName },
    type: event.type,
    reason: event.reason,
    message: event.message,
    source: { component: "kubelet", host: nodeName },
    reportingComponent: "kubelet",
    reportingInstance: nodeName,
    firstTimestamp: timestamp,
    lastTimestamp: timestamp,
    count: 1,
  };
}

function randomSuffix(): string {
  return Math.floor(Math.random() * 0x10000).toString(16).padStart(4, "0");
}

/** An object as the server sent it, without its managed fields. */
const lean = <T extends Node | Lease>(object: T): T => dropManagedFields(object);

function write(options: ApiCallOptions) {
  return { signal: options.signal, fieldManager: FIELD_MANAGER };
}

/** Names of the {@link NodeApi} calls that write. */
export const NODE_API_WRITES = [
  "createNode",
  "patchNode",
  "patchNodeStatus",
  "createLease",
  "updateLease",
] as const;

/** Wraps a {@link NodeApi} and counts calls by name (for benchmarks and tests). */
export function countingNodeApi(api: NodeApi): { api: NodeApi; counts: Map<string, number> } {
  const counts = new Map<string, number>();
  const counted = {} as Record<string, unknown>;
  for (const name of Object.keys(api) as (keyof NodeApi)[]) {
    const call = api[name] as (...args: unknown[]) => Promise<unknown>;
    counted[name] = (...args: unknown[]) => {
      counts.set(name, (counts.get(name) ?? 0) + 1);
      return call.apply(api, args);
    };
  }
  return { api: counted as unknown as NodeApi, counts };
}
