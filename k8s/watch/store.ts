/**
 * The informer's local cache: objects by `namespace/name` (or `name` when cluster-scoped).
 * @module
 */
import type { KubeObject } from "./watch.ts";

/** The key of an object: `namespace/name`, or `name` for cluster-scoped objects. */
export function objectKey(object: KubeObject): string {
  const name = object.metadata?.name;
  if (!name) throw new TypeError("object has no metadata.name");
  const namespace = object.metadata?.namespace;
  return namespace ? `${namespace}/${name}` : name;
}

/** Read access to cached objects; what controllers are handed. */
export interface ReadonlyStore<T> {
  /** A cluster-scoped object by name. */
  get(name: string): T | undefined;
  /** A namespaced object. */
  get(namespace: string, name: string): T | undefined;
  /** An object by {@link objectKey}. */
  getByKey(key: string): T | undefined;
  /** Every cached object, in no particular order. */
  list(): T[];
  keys(): string[];
  readonly size: number;
}

/** A map of objects by key; the informer is its only writer. */
export class Store<T extends KubeObject> implements ReadonlyStore<T> {
  #items = new Map<string, T>();

  get(nameOrNamespace: string, name?: string): T | undefined {
    return this.#items.get(name === undefined ? nameOrNamespace : `${nameOrNamespace}/${name}`);
  }

  getByKey(key: string): T | undefined {
    return this.#items.get(key);
  }

  list(): T[] {
    return [...this.#items.values()];
  }

  keys(): string[] {
    return [...this.#items.keys()];
  }

  get size(): number {
    return this.#items.size;
  }

  /** Stores an object; returns the one it replaced. */
  set(object: T): T | undefined {
    const key = objectKey(object);
    const old = this.#items.get(key);
    this.#items.set(key, object);
    return old;
  }

  /** Removes an object by key; returns it. */
  delete(key: string): T | undefined {
    const old = this.#items.get(key);
    this.#items.delete(key);
    return old;
  }
}
