/**
 * Helpers shared by the provider's parts: the fields a running pod may change, and a timeout
 * race. (Pods are filed under the kit's `podKey`; signals are raced with the kit's `raceSignal`.)
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";

/** `current` with the fields of `wanted` that a running pod may change. */
export function withMutableFields(current: Pod, wanted: Pod): Pod {
  const next = structuredClone(current);
  next.metadata!.labels = { ...wanted.metadata?.labels };
  next.metadata!.annotations = { ...wanted.metadata?.annotations };
  const images = new Map(
    [...wanted.spec?.containers ?? [], ...wanted.spec?.initContainers ?? []].map((
      c,
    ) => [c.name, c.image]),
  );
  for (const c of [...next.spec?.containers ?? [], ...next.spec?.initContainers ?? []]) {
    const image = images.get(c.name);
    if (image) c.image = image;
  }
  if (wanted.spec?.activeDeadlineSeconds !== undefined) {
    next.spec!.activeDeadlineSeconds = wanted.spec.activeDeadlineSeconds;
  }
  return next;
}

/** Waits for `promise` (settled either way) or `ms`, whichever comes first. */
export async function raceTimeout(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    promise.catch(() => {}),
    new Promise<void>((resolve) => timer = setTimeout(resolve, ms)),
  ]);
  clearTimeout(timer);
}
