/**
 * Sharing equal parts across objects (hash-consing): the pods of one ReplicaSet carry the same
 * containers, tolerations, probes and labels, and without this each pod held its own copy of all
 * of them. share.ts shares between versions of one object; this shares between objects.
 *
 * A part is kept frozen once it is shared: a holder that tried to change it would change every
 * object holding it, so it throws instead (module code is strict). Objects in the informer's cache
 * are read-only by contract anyway (Informer.store).
 * @module
 */

/**
 * A bounded table of shared parts. Parts are looked up by a key built from their own scalars
 * and the identities of their object parts, shared first (hash-consing: once the parts of two
 * objects are the same objects, the two are equal when their keys are), so each part is read
 * once however deep it sits, not once per level as its JSON text would be. The table has two
 * generations: a part found in the older one moves to the newer, and when the newer holds
 * `limit` parts the older is dropped. Parts in use by many objects stay; a part seen once (a
 * pod's own volume, its uid) leaves after two generations, so the table never holds more than
 * `2 × limit` parts.
 */
export class SharedParts {
  readonly #limit: number;
  #young = new Map<string, object>();
  #old = new Map<string, object>();
  /** Each object part's identity in keys; a number is never given twice. */
  readonly #ids = new WeakMap<object, number>();
  #nextId = 0;

  constructor(limit = 4096) {
    if (!(limit >= 1)) throw new RangeError(`SharedParts limit must be at least 1, got ${limit}`);
    this.#limit = limit;
  }

  /** Parts held now (both generations). */
  get size(): number {
    return this.#young.size + this.#old.size;
  }

  /**
   * Returns `value` with each object or array in it (itself included) replaced by an equal one
   * seen before, where there is one; the parts kept are frozen. Changes `value` in place (its
   * parts are set to the shared ones). A frozen part is taken as it is, not looked up: it is
   * shared already (from this table, or by whoever froze it). `value` is a JSON value (plain
   * objects, arrays, strings, numbers, booleans, null); equal means equal JSON text, key order
   * included (an `undefined` property counts as absent, as in JSON). Two equal parts may still
   * stay apart when a part of theirs left the table between them, or came frozen from elsewhere.
   */
  intern<T>(value: T): T {
    if (typeof value !== "object" || value === null) return value;
    return this.#intern(value) as T;
  }

  #intern(node: object): object {
    if (Object.isFrozen(node)) return node;
    let key: string;
    if (Array.isArray(node)) {
      const list: unknown[] = node;
      key = "[";
      for (let i = 0; i < list.length; i++) key += this.#partKey(list, i, list[i]);
    } else {
      key = "{";
      const record = node as Record<string, unknown>;
      for (const name in record) {
        const part = record[name];
        if (part === undefined) continue;
        key += `${name.length}:${name}${this.#partKey(record, name, part)}`;
      }
    }
    const found = this.#young.get(key) ?? this.#promote(key);
    if (found) return found;
    Object.freeze(node);
    this.#add(key, node);
    return node;
  }

  /**
   * The key of `holder[at]`, which holds `part`: a scalar spelt out (strings with their length,
   * so no text can pass for another), an object part shared first and named by its identity.
   */
  #partKey(
    holder: Record<string, unknown> | unknown[],
    at: string | number,
    part: unknown,
  ): string {
    switch (typeof part) {
      case "string":
        return `s${part.length}:${part}`;
      case "number":
        return `n${part};`;
      case "boolean":
        return part ? "t" : "f";
      case "object": {
        if (part === null) return "z";
        const shared = this.#intern(part);
        if (shared !== part) (holder as Record<string | number, unknown>)[at] = shared;
        return `#${this.#id(shared)};`;
      }
      default:
        // undefined in an array (JSON writes null); nothing else occurs in a JSON value.
        return "z";
    }
  }

  #id(part: object): number {
    let id = this.#ids.get(part);
    if (id === undefined) {
      id = ++this.#nextId;
      this.#ids.set(part, id);
    }
    return id;
  }

  #promote(key: string): object | undefined {
    const found = this.#old.get(key);
    if (found) {
      this.#old.delete(key);
      this.#add(key, found);
    }
    return found;
  }

  #add(key: string, part: object): void {
    if (this.#young.size >= this.#limit) {
      this.#old = this.#young;
      this.#young = new Map();
    }
    this.#young.set(key, part);
  }
}

/** The parts of a pod that {@link internPodParts} shares. */
interface PodLike {
  metadata?: Record<string, unknown>;
  spec?: unknown;
  status?: Record<string, unknown>;
}

/**
 * Shares a pod's spec, labels, annotations, owner references, conditions and host IPs with other
 * pods' equal ones (the replicas of one template; pods that started in the same second), through
 * `parts`. A part that is the same object as `previous`'s is left alone: it is an earlier
 * version's, or what this process wrote (Informer.expect), and stays its holder's. For an
 * informer's `intern` option.
 */
export function internPodParts<T extends object>(pod: T, parts: SharedParts, previous?: T): T {
  const [now, before] = [pod as PodLike, previous as PodLike | undefined];
  if (now.spec !== before?.spec) now.spec = parts.intern(now.spec);
  internFields(now.metadata, before?.metadata, PARTS_OF.metadata, parts);
  internFields(now.status, before?.status, PARTS_OF.status, parts);
  return pod;
}

const PARTS_OF = {
  metadata: ["labels", "annotations", "ownerReferences"],
  status: ["conditions", "hostIPs"],
} as const;

function internFields(
  object: Record<string, unknown> | undefined,
  previous: Record<string, unknown> | undefined,
  fields: readonly string[],
  parts: SharedParts,
): void {
  if (!object || object === previous) return;
  for (const field of fields) {
    const part = object[field];
    if (part === undefined || part === previous?.[field]) continue;
    const shared = parts.intern(part);
    if (shared !== part) object[field] = shared;
  }
}
