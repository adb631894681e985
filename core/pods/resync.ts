/**
 * The pod controller's periodic loops: the resync that catches whatever an event missed (a pod
 * left Pending or Terminating, a delete the watch lost, a pod the provider lost), the status poll
 * for providers that cannot push, and the sweep of provider pods whose API object is gone —
 * only ever after the informer has synced, so a slow start never deletes healthy pods
 * (elotl/kip#107).
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { jitter } from "../../base/clock.ts";
import { isNotFound, isTerminalPhase, podKeyOf } from "../../provider/mod.ts";
import type { PodContext } from "./pod_context.ts";
import { unreachable } from "./outage.ts";
import { syncStatus } from "./status_sync.ts";

/** The provider's pods, or undefined (logged) when it cannot list them. */
async function providerPods(ctx: PodContext, signal: AbortSignal): Promise<Pod[] | undefined> {
  try {
    return await ctx.provider.listPods({ signal });
  } catch (err) {
    ctx.log.warn(
      "could not list the provider's pods; orphans stay until the next resync: {err}",
      { err: String(err) },
    );
    return undefined;
  }
}

/**
 * Deletes provider pods of this node whose API object is gone (or is another uid); `running` is
 * the provider's list when the caller has it already.
 */
export async function sweepOrphans(
  ctx: PodContext,
  signal: AbortSignal,
  running?: Pod[],
): Promise<void> {
  running ??= await providerPods(ctx, signal);
  for (const pod of running ?? []) {
    const current = ctx.pods.store.getByKey(podKeyOf(pod));
    if (current && current.metadata?.uid === pod.metadata?.uid) continue;
    ctx.log.info("deleting {pod} from the provider: the API no longer has it", {
      pod: podKeyOf(pod),
    });
    await ctx.provider.deletePod(pod, { signal }).catch((err) => {
      if (!isNotFound(err)) {
        ctx.log.warn("could not delete orphan {pod}: {err}", {
          pod: podKeyOf(pod),
          err: String(err),
        });
      }
    });
  }
}

/** Every `periodMs` (jittered): syncs what may be out of step, until `signal` aborts. */
export async function resyncLoop(
  ctx: PodContext,
  periodMs: number,
  signal: AbortSignal,
): Promise<void> {
  let outageSeen = false;
  let lastTick = ctx.clock.now();
  while (!signal.aborted) {
    if (!await ctx.clock.sleep(jitter(periodMs, 0.1), signal).then(() => true, () => false)) {
      return;
    }
    // An outage that began and ended between two ticks counts too (its end is `since`).
    const changedAt = ctx.reachability?.current().since ?? -Infinity;
    if (changedAt > lastTick) outageSeen = true;
    lastTick = ctx.clock.now();
    if (unreachable(ctx)) {
      // The provider cannot reach its backend: a list it gives now may be stale or empty, so
      // nothing is created again or deleted on its strength; the statuses are kept, marked.
      outageSeen = true;
      for (const pod of ctx.pods.store.list()) ctx.statusQueue.add(podKeyOf(pod));
      continue;
    }
    if (outageSeen) {
      outageSeen = false;
      await refreshStatuses(ctx, signal);
    }
    const running = await providerPods(ctx, signal);
    const runningUids = new Map(running?.map((p) => [podKeyOf(p), p.metadata?.uid]));
    for (const pod of ctx.pods.store.list()) {
      const key = podKeyOf(pod);
      // Unchanged since the provider last ran it, and the provider still has it: nothing to
      // do (this is what keeps a resync of 10,000 pods cheap). Anything else is synced.
      const unchanged = running !== undefined && !pod.metadata?.deletionTimestamp &&
        ctx.states.get(key)?.syncedVersion === pod.metadata?.resourceVersion &&
        runningUids.get(key) === pod.metadata?.uid;
      if (!unchanged) ctx.syncQueue.add(key);
      ctx.statusQueue.add(key);
    }
    // Deletes the informer may have missed while vkubelet was busy or disconnected.
    for (const key of ctx.states.keys()) {
      if (!ctx.pods.store.getByKey(key)) ctx.syncQueue.add(key);
    }
    await sweepOrphans(ctx, signal, running);
  }
}

/**
 * After an outage, before the first resync compares or sweeps anything: every pod's status asked
 * of the provider and written (the recovery handler queued the same; this waits for it).
 */
async function refreshStatuses(ctx: PodContext, signal: AbortSignal): Promise<void> {
  const keys = ctx.pods.store.list()
    .filter((p) => !isTerminalPhase(p.status?.phase) || p.metadata?.deletionTimestamp)
    .map(podKeyOf);
  await Promise.all(keys.map((key) =>
    syncStatus(ctx, key, signal, true).catch((err) => {
      ctx.log.warn("refreshing {pod}'s status after the outage failed: {err}", {
        pod: key,
        err: String(err),
      });
    })
  ));
}

/** Every `intervalMs`: asks the provider for the status of each live pod, until `signal` aborts. */
export async function pollLoop(
  ctx: PodContext,
  intervalMs: number,
  signal: AbortSignal,
): Promise<void> {
  while (!signal.aborted) {
    if (!await ctx.clock.sleep(intervalMs, signal).then(() => true, () => false)) return;
    for (const pod of ctx.pods.store.list()) {
      if (isTerminalPhase(pod.status?.phase) && !pod.metadata?.deletionTimestamp) continue;
      const state = ctx.states.get(podKeyOf(pod));
      if (state) state.pollDue = true;
      ctx.statusQueue.add(podKeyOf(pod));
    }
  }
}
