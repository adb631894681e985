/**
 * Freezing for the mock's pod records: a record's pod is replaced, never changed, so it can be
 * handed to the core's status callback and to `listPods` without a copy (a resync of 10,000 pods
 * used to clone every one of them). What the mock builds itself (the record's top-level pod
 * object and its status) is frozen; the rest is the pod the core handed to createPod, whose
 * parts are the informer's own and read-only by contract (see Provider.createPod), so it is not
 * walked again for every pod (a deep freeze of each new pod was 5 % of a 10,000-pod restart).
 * @module
 */
import type { Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";

/** Freezes `value` and everything reachable from it; already frozen parts are skipped. */
export function frozen<T>(value: T): T {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const child of Object.values(value)) frozen(child);
  return value;
}

/** `pod` with `status` (and `metadata`, if given) as a frozen record: the top object and the status. */
export function frozenPod(pod: Pod, status: PodStatus | undefined, metadata = pod.metadata): Pod {
  return Object.freeze({ ...pod, metadata, status: frozen(status) });
}
