/**
 * An informer: list, then watch from the list's resourceVersion, keeping a local {@link Store}
 * and telling handlers about each add, update and delete once. Modelled on client-go's reflector
 * and shared informer (`tools/cache/reflector.go`, `shared_informer.go`): resume after a
 * disconnect from the last resourceVersion seen, relist only on 410 Gone, and on relist report
 * only what changed.
 * @module
 */
import { type Clock, jitter, realClock } from "../../base/clock.ts";
import { getLogger } from "../../base/log.ts";
import { isGone } from "../errors.ts";
import { objectKey, type ReadonlyStore, Store } from "./store.ts";
import { shareUnchanged } from "./share.ts";
import type { WatchEvent } from "./watch.ts";
import type { InformerHandlers, InformerOptions, KubeObject, ListResult } from "../api_types.ts";
export type {
  InformerHandlers,
  InformerOptions,
  ListOptions,
  ListResult,
  ListWatchSource,
} from "../api_types.ts";

/** Drops `metadata.managedFields` (the default {@link InformerOptions.transform}). */
export function dropManagedFields<T extends KubeObject>(object: T): T {
  const metadata = object.metadata as { managedFields?: unknown } | undefined;
  if (metadata?.managedFields) delete metadata.managedFields;
  return object;
}

/** Keeps a local copy of a set of objects in step with the apiserver. */
export class Informer<T extends KubeObject> {
  /** Resolves once the first list is in the store and its `add` handlers have run. */
  readonly synced: Promise<void>;
  #store = new Store<T>();
  #options: InformerOptions<T>;
  #clock: Clock;
  #transform: (object: T) => T;
  #intern: (object: T, previous: T | undefined) => T;
  #handlers: { [K in keyof InformerHandlers<T>]: Set<InformerHandlers<T>[K]> } = {
    add: new Set(),
    update: new Set(),
    delete: new Set(),
  };
  #resolveSynced!: () => void;
  #rejectSynced!: (reason: unknown) => void;
  #isSynced = false;
  #running = false;
  #resourceVersion?: string;
  /** Objects this process wrote, by key, until the key's next event (see {@link expect}). */
  #expected = new Map<string, T>();
  #log;

  constructor(options: InformerOptions<T>) {
    this.#options = options;
    this.#clock = options.clock ?? realClock;
    this.#transform = options.transform ?? dropManagedFields;
    this.#intern = options.intern ?? ((object) => object);
    this.#log = getLogger(["vkubelet", "k8s", "informer"]).with({
      informer: options.name ?? "objects",
    });
    this.synced = new Promise<void>((resolve, reject) => {
      this.#resolveSynced = resolve;
      this.#rejectSynced = reject;
    });
    this.synced.catch(() => {}); // a run that ends before syncing must not be an unhandled rejection
  }

  /** True once the first list has been cached (when {@link synced} resolved). */
  get isSynced(): boolean {
    return this.#isSynced;
  }

  /**
   * The local cache. Objects in it are shared, and a new version of an object shares the parts
   * that did not change with the version before it (see share.ts): do not change them.
   */
  get store(): ReadonlyStore<T> {
    return this.#store;
  }

  /** The resourceVersion the cache reflects (from the last list, event or bookmark). */
  get resourceVersion(): string | undefined {
    return this.#resourceVersion;
  }

  /**
   * Tells the cache that the next version of `object`'s key will likely equal `object` in parts:
   * an object this process just wrote (a pod with the status it wrote). That version then shares
   * those parts with `object` (kept alive by the writer anyway) instead of holding its own copy.
   * Kept until the key's next event or the next relist; `object` must not be changed afterwards.
   */
  expect(object: T): void {
    this.#expected.set(objectKey(object), object);
  }

  /** Registers a handler; returns a function that removes it. Handlers must not block. */
  on<K extends keyof InformerHandlers<T>>(event: K, handler: InformerHandlers<T>[K]): () => void {
    this.#handlers[event].add(handler);
    return () => this.#handlers[event].delete(handler);
  }

  /** Lists and watches until the signal aborts; resolves then. `synced` rejects if it never synced. */
  async run(signal: AbortSignal): Promise<void> {
    if (this.#running) throw new TypeError("this informer is already running");
    this.#running = true;
    let backoff = 800;
    try {
      while (!signal.aborted) {
        try {
          await this.#listAndReplace(signal);
          backoff = 800;
          await this.#watch(signal);
        } catch (err) {
          if (signal.aborted) break;
          if (isGone(err)) {
            this.#log.info("resourceVersion {resourceVersion} expired; relisting", {
              resourceVersion: this.#resourceVersion,
            });
            continue;
          }
          this.#log.warn("list/watch failed; retrying: {err}", { err: (err as Error).message });
          await this.#clock.sleep(jitter(backoff, 0.5), signal).catch(() => {});
          backoff = Math.min(backoff * 2, 30_000);
        }
      }
    } finally {
      this.#running = false;
      if (!this.#isSynced) this.#rejectSynced(signal.reason ?? new Error("informer stopped"));
    }
  }

  async #listAndReplace(signal: AbortSignal): Promise<void> {
    const { items, resourceVersion } = await this.#listAll(signal);
    this.#replace(items);
    this.#resourceVersion = resourceVersion;
    if (!this.#isSynced) {
      this.#isSynced = true;
      this.#resolveSynced();
    }
  }

  async #listAll(signal: AbortSignal): Promise<{ items: T[]; resourceVersion?: string }> {
    const { labelSelector, fieldSelector } = this.#options;
    const limit = this.#options.pageSize ?? 500;
    const items: T[] = [];
    let cont: string | undefined;
    let resourceVersion: string | undefined;
    do {
      let page: ListResult<T>;
      try {
        page = await this.#options.source.list({
          labelSelector,
          fieldSelector,
          limit,
          continue: cont,
          signal,
        });
      } catch (err) {
        if (!(cont && isGone(err))) throw err;
        // The continue token expired mid-way: fall back to one unpaged list (as client-go's pager does).
        items.length = 0;
        page = await this.#options.source.list({ labelSelector, fieldSelector, signal });
      }
      for (const item of page.items) items.push(this.#transform(item));
      resourceVersion = page.metadata?.resourceVersion;
      cont = page.metadata?.continue || undefined;
    } while (cont);
    return { items, resourceVersion };
  }

  /** Makes the store equal to a fresh list, telling handlers only about differences. */
  #replace(items: T[]): void {
    const seen = new Set<string>();
    for (const item of items) {
      const key = objectKey(item);
      seen.add(key);
      const old = this.#store.getByKey(key);
      if (old && old.metadata?.resourceVersion === item.metadata?.resourceVersion) continue;
      if (old) {
        const shared = this.#shared(this.#sharingBase(key, old, item), item);
        this.#store.set(shared);
        this.#emit("update", shared, old);
      } else {
        const added = this.#intern(item, undefined);
        this.#store.set(added);
        this.#emit("add", added);
      }
    }
    this.#expected.clear();
    for (const key of this.#store.keys()) {
      if (seen.has(key)) continue;
      const old = this.#store.delete(key)!;
      this.#emit("delete", old);
    }
  }

  async #watch(signal: AbortSignal): Promise<void> {
    const { labelSelector, fieldSelector } = this.#options;
    const events = this.#options.source.watch({
      resourceVersion: this.#resourceVersion,
      labelSelector,
      fieldSelector,
      allowWatchBookmarks: true,
      clock: this.#clock,
      signal,
    });
    for await (const event of events) this.#apply(event);
  }

  #apply(event: WatchEvent<T>): void {
    const version = event.object?.metadata?.resourceVersion;
    if (event.type === "BOOKMARK") {
      this.#resourceVersion = version ?? this.#resourceVersion;
      return;
    }
    const object = this.#transform(event.object);
    const key = objectKey(object);
    const old = this.#store.getByKey(key);
    const base = this.#sharingBase(key, old, object);
    if (event.type === "DELETED") {
      this.#store.delete(key);
      if (old) this.#emit("delete", object);
    } else if (!old) {
      const added = this.#intern(object, undefined);
      this.#store.set(added);
      this.#emit("add", added);
    } else if (old.metadata?.resourceVersion !== version) {
      const shared = this.#shared(base, object);
      this.#store.set(shared);
      this.#emit("update", shared, old);
    }
    this.#resourceVersion = version ?? this.#resourceVersion;
  }

  /** `next` sharing what did not change with `base`, and the rest with other objects. */
  #shared(base: T | undefined, next: T): T {
    const shared = shareUnchanged(base, next);
    return shared === base ? shared : this.#intern(shared, base);
  }

  /** What a new version of `key` shares parts with: what we wrote of it if anything, else `old`. */
  #sharingBase(key: string, old: T | undefined, next: T): T | undefined {
    const expected = this.#expected.get(key);
    if (!expected) return old;
    this.#expected.delete(key);
    return expected.metadata?.uid === next.metadata?.uid ? expected : old;
  }

  #emit<K extends keyof InformerHandlers<T>>(
    event: K,
    ...args: Parameters<InformerHandlers<T>[K]>
  ): void {
    for (const handler of this.#handlers[event]) {
      try {
        (handler as (...a: unknown[]) => unknown)(...args);
      } catch (err) {
        this.#log.error("{event} handler threw: {err}", { event, err: (err as Error).message });
      }
    }
  }
}
