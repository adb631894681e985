/**
 * The shapes of the client's objects, lists, watches and informers, as types only: what the
 * provider kit's client interface is written in, without pulling in the client itself.
 * @module
 */
import type { Clock } from "../base/clock.ts";

/** An object with the metadata a watch needs. */
export interface KubeObject {
  /** Name, namespace, version and uid: what a cache keys and resumes by. */
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; uid?: string };
}

/** One change seen by a watch. `BOOKMARK` objects carry only `metadata.resourceVersion`. */
export interface WatchEvent<T> {
  /** What happened to the object. */
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";
  /** The object as it is now (as it was last, for `DELETED`). */
  object: T;
}

/** Selectors and starting point of a watch. */
export interface WatchOptions {
  /** Start after this version; omitted means "current state as ADDED events, then changes". */
  resourceVersion?: string;
  /** Only objects whose labels match, e.g. `app=web`. */
  labelSelector?: string;
  /** Only objects whose fields match, e.g. `spec.nodeName=vk-1`. */
  fieldSelector?: string;
  /** Ask for BOOKMARK events so that resuming is cheap; default true. */
  allowWatchBookmarks?: boolean;
  /** Stops the watch; the iteration then ends without an error. */
  signal?: AbortSignal;
}

/** Options of a watch that resumes from its last version after a disconnect. */
export interface ResumableWatchOptions extends WatchOptions {
  /** The clock back-off sleeps on; the real one by default. */
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
  /** Only objects whose labels match, e.g. `app=web`. */
  labelSelector?: string;
  /** Only objects whose fields match, e.g. `metadata.name=my-config`. */
  fieldSelector?: string;
  /** Page size; the answer's `metadata.continue` fetches the next page. */
  limit?: number;
  /** The previous page's `metadata.continue`. */
  continue?: string;
  /** Answer from this version (with {@link ListOptions.resourceVersionMatch}) or newer. */
  resourceVersion?: string;
  /** How {@link ListOptions.resourceVersion} is matched. */
  resourceVersionMatch?: "Exact" | "NotOlderThan";
  /** Aborts the call. */
  signal?: AbortSignal;
}

/** What a list returns. */
export interface ListResult<T> {
  /** The objects of this page. */
  items: T[];
  /** The list's version (a watch resumes from it) and the next page's token. */
  metadata?: { resourceVersion?: string; continue?: string };
}

/** Where an informer lists and watches; every typed resource helper can produce one. */
export interface ListWatchSource<T> {
  /** One page of the list. */
  list(options: ListOptions): Promise<ListResult<T>>;
  /** The changes after a list's version. */
  watch(options: ResumableWatchOptions): AsyncIterable<WatchEvent<T>>;
}

/** Options of an informer (a list+watch cache). */
export interface InformerOptions<T> {
  /** Where it lists and watches. */
  source: ListWatchSource<T>;
  /** Only objects whose labels match. */
  labelSelector?: string;
  /** Only objects whose fields match. */
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
  /** The clock relists and back-off sleep on; the real one by default. */
  clock?: Clock;
  /** Names this informer in logs, e.g. `pods`. */
  name?: string;
}

/** Handlers by event; `update` also gets the previous object. */
export interface InformerHandlers<T> {
  /** A new object, or one seen first by a (re)list. */
  add: (object: T) => void;
  /** A changed object, with the version the cache held before. */
  update: (object: T, old: T) => void;
  /** An object that is gone. */
  delete: (object: T) => void;
}

/** List or watch in one namespace, or in all when `namespace` is omitted. */
export type InNamespace<O> = O & { namespace?: string };

/** Options of a resource's `informer()`. */
export type ResourceInformerOptions<T> = Omit<InformerOptions<T>, "source"> & {
  namespace?: string;
};
