/**
 * The public faces of {@link ResourceApi}: {@link NamespacedApi} for kinds that live in a
 * namespace, {@link ClusterApi} for cluster-scoped kinds.
 * @module
 */
import type { Status } from "kubernetes-types/meta/v1.d.ts";
import type { Informer, ListOptions, ListResult } from "../watch/informer.ts";
import type { KubeObject, ResumableWatchOptions, WatchEvent } from "../watch/watch.ts";
import {
  type DeleteOptions,
  type PatchOptions,
  ResourceApi,
  type ResourceInformerOptions,
  type WriteOptions,
} from "./resource.ts";

import type { SignalOptions } from "../../base/options.ts";
import type { InNamespace } from "../api_types.ts";
export type { InNamespace } from "../api_types.ts";
export type { SignalOptions };

/** A kind that lives in namespaces (pods, leases, secrets, ...). */
export class NamespacedApi<T extends KubeObject, L extends ListResult<T> = ListResult<T>>
  extends ResourceApi<T, L> {
  /** Lists objects (one page if `limit` is set; see `metadata.continue`). */
  list(options: InNamespace<ListOptions> = {}): Promise<L> {
    const { namespace, ...rest } = options;
    return this.listIn(namespace, rest);
  }

  /** Watches without end, resuming after disconnects; throws on 410 Gone (relist then). */
  watch(options: InNamespace<ResumableWatchOptions> = {}): AsyncGenerator<WatchEvent<T>> {
    const { namespace, ...rest } = options;
    return this.watchIn(namespace, rest);
  }

  /** A list+watch cache of these objects; call `run(signal)` on it. */
  informer(options: ResourceInformerOptions<T> = {}): Informer<T> {
    return this.informerIn(options);
  }

  get(namespace: string, name: string, options?: SignalOptions): Promise<T> {
    return this.getIn(namespace, name, options);
  }

  create(namespace: string, object: T, options?: WriteOptions): Promise<T> {
    return this.createIn(namespace, object, options);
  }

  /** Replaces the object named by its metadata; fails with 409 if its resourceVersion is stale. */
  update(object: T, options: WriteOptions = {}): Promise<T> {
    return this.putIn(requireNamespace(object, this.info.plural), undefined, options);
  }

  /** Replaces the object's status. */
  updateStatus(object: T, options: WriteOptions = {}): Promise<T> {
    return this.putIn(requireNamespace(object, this.info.plural), "status", options);
  }

  patch(namespace: string, name: string, options: PatchOptions): Promise<T> {
    return this.patchIn(namespace, name, undefined, options);
  }

  patchStatus(namespace: string, name: string, options: PatchOptions): Promise<T> {
    return this.patchIn(namespace, name, "status", options);
  }

  /** Deletes; answers the object (still there while graceful deletion runs) or a Status. */
  delete(namespace: string, name: string, options: DeleteOptions = {}): Promise<T | Status> {
    return this.deleteIn(namespace, name, options);
  }

  /** Deletes every object in the namespace that matches the selectors. */
  deleteCollection(
    namespace: string,
    options: DeleteOptions & Pick<ListOptions, "labelSelector" | "fieldSelector"> = {},
  ): Promise<L | Status> {
    return this.deleteCollectionIn(namespace, options);
  }
}

/** A cluster-scoped kind (nodes, CSRs, namespaces, ...). */
export class ClusterApi<T extends KubeObject, L extends ListResult<T> = ListResult<T>>
  extends ResourceApi<T, L> {
  list(options: ListOptions = {}): Promise<L> {
    return this.listIn(undefined, options);
  }

  /** Watches without end, resuming after disconnects; throws on 410 Gone (relist then). */
  watch(options: ResumableWatchOptions = {}): AsyncGenerator<WatchEvent<T>> {
    return this.watchIn(undefined, options);
  }

  /** A list+watch cache of these objects; call `run(signal)` on it. */
  informer(options: Omit<ResourceInformerOptions<T>, "namespace"> = {}): Informer<T> {
    return this.informerIn(options);
  }

  get(name: string, options?: SignalOptions): Promise<T> {
    return this.getIn(undefined, name, options);
  }

  create(object: T, options?: WriteOptions): Promise<T> {
    return this.createIn(undefined, object, options);
  }

  update(object: T, options: WriteOptions = {}): Promise<T> {
    return this.putIn(object, undefined, options);
  }

  updateStatus(object: T, options: WriteOptions = {}): Promise<T> {
    return this.putIn(object, "status", options);
  }

  patch(name: string, options: PatchOptions): Promise<T> {
    return this.patchIn(undefined, name, undefined, options);
  }

  patchStatus(name: string, options: PatchOptions): Promise<T> {
    return this.patchIn(undefined, name, "status", options);
  }

  delete(name: string, options: DeleteOptions = {}): Promise<T | Status> {
    return this.deleteIn(undefined, name, options);
  }
}

function requireNamespace<T extends KubeObject>(object: T, plural: string): T {
  if (!object.metadata?.namespace) {
    throw new TypeError(`${plural}: update needs metadata.namespace`);
  }
  return object;
}
