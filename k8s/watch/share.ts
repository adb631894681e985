/**
 * Structural sharing between two versions of one object: a new version from the watch keeps the
 * previous version's parts wherever they are equal, so a pod whose status changed still holds
 * the one `spec` object it had, and whoever kept a reference to that `spec` (a provider's record,
 * the controller's last-known pod) shares it with the cache instead of holding a second copy.
 * This is what the informer cache is made of at 10,000 pods: without it every status write came
 * back as a whole new pod, and each holder of an older version held a whole copy.
 * @module
 */

/**
 * Returns `next` with each part equal to the same part of `previous` replaced by that part (strings
 * too: the previous version's string is kept, the new one left to the collector), or
 * `previous` itself when the two are equal throughout. Changes `next` in place (a fresh object
 * from the watch, not yet shared), never `previous`; a frozen `next` is returned as it is.
 * Both are JSON values (plain objects, arrays, strings, numbers, booleans, null).
 */
export function shareUnchanged<T>(previous: unknown, next: T): T {
  return share(previous, next) as T;
}

function share(previous: unknown, next: unknown): unknown {
  if (previous === next) return previous;
  if (
    typeof next !== "object" || next === null || typeof previous !== "object" ||
    previous === null || Array.isArray(next) !== Array.isArray(previous) || Object.isFrozen(next)
  ) {
    return next;
  }
  if (Array.isArray(next)) {
    const before = previous as unknown[];
    let same = before.length === next.length;
    for (let i = 0; i < next.length; i++) {
      // Written even when equal: `!==` cannot tell two equal strings apart, and the previous
      // one is the one to keep.
      const part = share(before[i], next[i]);
      next[i] = part;
      if (part !== before[i]) same = false;
    }
    return same ? previous : next;
  }
  const before = previous as Record<string, unknown>;
  const after = next as Record<string, unknown>;
  // for-in over parsed JSON (own keys only, no key array to allocate: this runs for every
  // object of every watch event).
  let same = true;
  let count = 0;
  for (const key in after) {
    count++;
    if (!Object.hasOwn(before, key)) {
      same = false;
      continue;
    }
    const part = share(before[key], after[key]);
    after[key] = part;
    if (part !== before[key]) same = false;
  }
  return same && keyCount(before) === count ? previous : next;
}

function keyCount(object: Record<string, unknown>): number {
  let count = 0;
  for (const _ in object) count++;
  return count;
}
