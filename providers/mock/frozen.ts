/**
 * Deep `Object.freeze` for the mock's pod records: a record's pod is replaced, never changed, so
 * once frozen it can be handed to the core's status callback and to `listPods` without a copy
 * (a resync of 10,000 pods used to clone every one of them). The parts it shares with the
 * informer's objects (see Provider.createPod) are frozen with it; nothing changes those either.
 * @module
 */

/** Freezes `value` and everything reachable from it; already frozen parts are skipped. */
export function frozen<T>(value: T): T {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const child of Object.values(value)) frozen(child);
  return value;
}
