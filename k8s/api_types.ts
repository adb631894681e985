/**
 * The shapes of the client's objects, lists, watches and informers, as types only: what the
 * provider kit's client interface is written in, without pulling in the client itself.
 * @module
 */
import type { Clock } from "../base/clock.ts";

/** An object with the metadata a watch needs. */
export interface KubeObject {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; uid?: string };
}

/** One change seen by a watch. `BOOKMARK` objects carry only `metadata.resourceVersion`. */
export interface WatchEvent<T> {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";
  object: T;
}

/** Selectors and starting point of a watch. */
export interface WatchOptions {
  /** Start after this version; omitted means "current state as ADDED events, then changes". */
  resourceVersion?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Ask for BOOKMARK events so that resuming is cheap; default true. */
  allowWatchBookmarks?: boolean;
  /** Stops the watch; the iteration then ends without an error. */
  signal?: AbortSignal;
}

/** Options for {@link resumableWatch}. */
export interface ResumableWatchOptions extends WatchOptions {
  clock?: Clock;
  /** First delay after a failed connection; doubles up to `maxBackoffMs`. Default 800 ms. */
  initialBackoffMs?: number;
  /** Default 30 s, like client-go's reflector. */
  maxBackoffMs?: number;
  /**
   * How long the apiserver keeps each connection open before the watch reconnects; default a
   * random 5 to 10 minutes, as client-go's reflector does, so that clients do not reconnect in step.
   */
  timeoutSeconds?: number;
}

/** Options of one list call (one page). */
export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  /** Page size; the answer's `metadata.continue` fetches the next page. */
  limit?: number;
  continue?: string;
  resourceVersion?: string;
  resourceVersionMatch?: "Exact" | "NotOlderThan";
  signal?: AbortSignal;
}

/** What a list returns. */
export interface ListResult<T> {
  items: T[];
  metadata?: { resourceVersion?: string; continue?: string };
}

/** Where an informer lists and watches; every typed resource helper can produce one. */
export interface ListWatchSource<T> {
  list(options: ListOptions): Promise<ListResult<T>>;
  watch(options: ResumableWatchOptions): AsyncIterable<WatchEvent<T>>;
}

/** Options for {@link Informer}. */
export interface InformerOptions<T> {
  source: ListWatchSource<T>;
  labelSelector?: string;
  fieldSelector?: string;
  /** Objects per list page; default 500, like client-go's pager. */
  pageSize?: number;
  /**
   * Applied to each object before it is cached. The default drops `metadata.managedFields`,
   * which is often half an object's size and which no controller here reads; updates sent
   * without it leave the server's copy untouched.
   */
  transform?: (object: T) => T;
  /**
   * Applied to each object the cache takes that is new or changed, after it shares what did not
   * change with its previous version (`previous`: the cached version, or what this process wrote
   * of it): for sharing parts across objects (intern.ts `internPodParts`). May change the object
   * in place, not its previous version.
   */
  intern?: (object: T, previous: T | undefined) => T;
  clock?: Clock;
  /** Names this informer in logs, e.g. `pods`. */
  name?: string;
}

/** Handlers by event; `update` also gets the previous object. */
export interface InformerHandlers<T> {
  add: (object: T) => void;
  update: (object: T, old: T) => void;
  delete: (object: T) => void;
}

/** List or watch in one namespace, or in all when `namespace` is omitted. */
export type InNamespace<O> = O & { namespace?: string };

/** Options of a resource's `informer()`. */
export type ResourceInformerOptions<T> = Omit<InformerOptions<T>, "source"> & {
  namespace?: string;
};
