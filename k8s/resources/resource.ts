/**
 * Typed access to one kind of object: list, watch, get, create, update, patch (JSON merge,
 * strategic merge, JSON patch, server-side apply), delete, and the `status` subresource.
 * Namespaced kinds take `(namespace, name)`; cluster-scoped kinds take `(name)`.
 * @module
 */
import type { Status } from "kubernetes-types/meta/v1.d.ts";
import type { KubeRequester, Query } from "../request.ts";
import { Informer, type ListOptions, type ListResult } from "../watch/informer.ts";
import {
  type KubeObject,
  resumableWatch,
  type ResumableWatchOptions,
  type WatchEvent,
} from "../watch/watch.ts";
import type { ResourceInformerOptions } from "../api_types.ts";
export type { ResourceInformerOptions } from "../api_types.ts";

/** Where a kind lives in the API. */
export interface ResourceInfo {
  /** API group; empty for the core group. */
  group: string;
  version: string;
  /** Lower-case plural used in paths, e.g. `pods`. */
  plural: string;
}

/** Options of any write. */
export interface WriteOptions {
  signal?: AbortSignal;
  /** Validate and answer without persisting. */
  dryRun?: boolean;
  /** Names the writer in `managedFields`; required for apply patches. */
  fieldManager?: string;
}

/** The four patch formats the apiserver accepts. */
export type PatchType = "merge" | "strategic" | "json" | "apply";

const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: "application/merge-patch+json",
  strategic: "application/strategic-merge-patch+json",
  json: "application/json-patch+json",
  apply: "application/apply-patch+yaml",
};

/** A patch and how to apply it. */
export interface PatchOptions extends WriteOptions {
  type: PatchType;
  /** The patch document: an object, or a list of operations for `json`. */
  body: unknown;
  /** For `apply`: take ownership of fields other managers own. */
  force?: boolean;
}

/** Options of a delete. */
export interface DeleteOptions {
  signal?: AbortSignal;
  /** 0 deletes at once; omitted uses the object's own grace period. */
  gracePeriodSeconds?: number;
  /** Delete only if the object still has this uid / resourceVersion (else 409 Conflict). */
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: "Orphan" | "Background" | "Foreground";
  dryRun?: boolean;
}

function writeQuery(options: WriteOptions, extra: Query = {}): Query {
  return {
    dryRun: options.dryRun ? "All" : undefined,
    fieldManager: options.fieldManager,
    ...extra,
  };
}

function deleteBody(options: DeleteOptions) {
  return {
    apiVersion: "v1",
    kind: "DeleteOptions",
    gracePeriodSeconds: options.gracePeriodSeconds,
    preconditions: options.preconditions,
    propagationPolicy: options.propagationPolicy,
    dryRun: options.dryRun ? ["All"] : undefined,
  };
}

/** Operations shared by namespaced and cluster-scoped kinds; `ns` is undefined for the latter. */
export class ResourceApi<T extends KubeObject, L extends ListResult<T> = ListResult<T>> {
  protected readonly requester: KubeRequester;
  readonly info: ResourceInfo;

  constructor(requester: KubeRequester, info: ResourceInfo) {
    this.requester = requester;
    this.info = info;
  }

  /** The URL path of the collection, an object, or an object's subresource. */
  path(namespace?: string, name?: string, subresource?: string): string {
    const { group, version, plural } = this.info;
    let path = group ? `/apis/${group}/${version}` : `/api/${version}`;
    if (namespace) path += `/namespaces/${encodeURIComponent(namespace)}`;
    path += `/${plural}`;
    if (name !== undefined) {
      if (name === "") throw new TypeError(`${plural}: object name is empty`);
      path += `/${encodeURIComponent(name)}`;
    }
    if (subresource) path += `/${subresource}`;
    return path;
  }

  protected listIn(namespace: string | undefined, options: ListOptions): Promise<L> {
    const { signal, ...query } = options;
    return this.requester.request<L>({ path: this.path(namespace), query: { ...query }, signal });
  }

  protected watchIn(
    namespace: string | undefined,
    options: ResumableWatchOptions,
  ): AsyncGenerator<WatchEvent<T>> {
    return resumableWatch<T>(this.requester, this.path(namespace), options);
  }

  protected informerIn(options: ResourceInformerOptions<T>): Informer<T> {
    const { namespace, ...rest } = options;
    return new Informer<T>({
      name: this.info.plural,
      ...rest,
      source: {
        list: (o) => this.listIn(namespace, o),
        watch: (o) => this.watchIn(namespace, o),
      },
    });
  }

  protected getIn(
    namespace: string | undefined,
    name: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<T> {
    return this.requester.request<T>({ path: this.path(namespace, name), signal: options.signal });
  }

  protected createIn(
    namespace: string | undefined,
    object: T,
    options: WriteOptions = {},
  ): Promise<T> {
    return this.requester.request<T>({
      method: "POST",
      path: this.path(namespace),
      query: writeQuery(options),
      body: object,
      signal: options.signal,
    });
  }

  protected putIn(object: T, subresource: string | undefined, options: WriteOptions): Promise<T> {
    const name = object.metadata?.name;
    if (!name) throw new TypeError(`${this.info.plural}: update needs metadata.name`);
    return this.requester.request<T>({
      method: "PUT",
      path: this.path(object.metadata?.namespace, name, subresource),
      query: writeQuery(options),
      body: object,
      signal: options.signal,
    });
  }

  protected patchIn(
    namespace: string | undefined,
    name: string,
    subresource: string | undefined,
    options: PatchOptions,
  ): Promise<T> {
    if (options.type === "apply" && !options.fieldManager) {
      throw new TypeError("a server-side apply patch needs fieldManager");
    }
    return this.requester.request<T>({
      method: "PATCH",
      path: this.path(namespace, name, subresource),
      query: writeQuery(options, { force: options.type === "apply" ? options.force : undefined }),
      body: options.body,
      contentType: PATCH_CONTENT_TYPES[options.type],
      signal: options.signal,
    });
  }

  protected deleteCollectionIn(
    namespace: string | undefined,
    options: DeleteOptions & Pick<ListOptions, "labelSelector" | "fieldSelector">,
  ): Promise<L | Status> {
    const { labelSelector, fieldSelector, ...rest } = options;
    return this.requester.request<L | Status>({
      method: "DELETE",
      path: this.path(namespace),
      query: { labelSelector, fieldSelector },
      body: deleteBody(rest),
      signal: options.signal,
    });
  }

  protected deleteIn(
    namespace: string | undefined,
    name: string,
    options: DeleteOptions,
  ): Promise<T | Status> {
    return this.requester.request<T | Status>({
      method: "DELETE",
      path: this.path(namespace, name),
      body: deleteBody(options),
      signal: options.signal,
    });
  }
}
