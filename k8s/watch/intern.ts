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
 * A bounded table of shared parts. Parts are looked up by their JSON text, in two generations:
 * a part found in the older one moves to the newer, and when the newer holds `limit` parts the
 * older is dropped. Parts in use by many objects stay; a part seen once (a pod's own volume, its
 * uid) leaves after two generations, so the table never holds more than `2 × limit` parts.
 */
export class SharedParts {
  readonly #limit: number;
  #young = new Map<string, object>();
  #old = new Map<string, object>();

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
   * included (an `undefined` property counts as absent, as in JSON).
   */
  intern<T>(value: T): T {
    return this.#intern(value) as T;
  }

  #intern(value: unknown): unknown {
    if (typeof value !== "object" || value === null || Object.isFrozen(value)) return value;
    const node = value as Record<string, unknown>;
    for (const key in node) {
      const part = node[key];
      if (typeof part !== "object" || part === null) continue;
      const shared = this.#intern(part);
      if (shared !== part) node[key] = shared;
    }
    const text = JSON.stringify(node);
    const found = this.#young.get(text) ?? this.#promote(text);
    if (found) return found;
    Object.freeze(node);
    this.#add(text, node);
    return node;
  }

  #promote(text: string): object | undefined {
    const found = this.#old.get(text);
    if (found) {
      this.#old.delete(text);
      this.#add(text, found);
    }
    return found;
  }

  #add(text: string, part: object): void {
    if (this.#young.size >= this.#limit) {
      this.#old = this.#young;
      this.#young = new Map();
    }
    this.#young.set(text, part);
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
