/**
 * The status worker for one key: writes the provider's status (or the controller's own, when the
 * provider has none) to the API with the pod's resourceVersion. The write is skipped when the
 * API already holds that status; on 409 Conflict the pod is read again and the write retried, so
 * a status another writer changed is put right again. Terminal pods are left alone, as the
 * kubelet never moves a pod out of Succeeded or Failed.
 * @module
 */
import type { Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import { isConflict, isForbidden, isKubeNotFound } from "../../k8s/errors.ts";
import { splitKey } from "./api.ts";
import { withEphemeralWaiting } from "./ephemeral.ts";
import type { PodContext } from "./pod_context.ts";
import type { StatusMemo, UidStatus } from "./pod_state.ts";
import { isTerminalPhase, podKeyOf } from "../../provider/mod.ts";
import { lifecycleEvents, mergeStatus, statusEqual } from "./pod_status.ts";
import { tracedStatusWrite } from "./pod_traces.ts";
import { markReachability, unreachable, wasRunningInOutage } from "./outage.ts";

const MAX_CONFLICT_RETRIES = 5;

/**
 * Syncs the status of one key; `poll` asks the provider first (for providers that cannot push).
 * Runs after any sync of the same key still in progress (the status queue and a deleting pod's
 * final write would otherwise race into a 409 and a read).
 */
export function syncStatus(
  ctx: PodContext,
  key: string,
  signal: AbortSignal,
  poll: boolean,
): Promise<void> {
  const state = ctx.states.get(key);
  // No record: a pod the controller does not hold (gone and forgotten), nothing to write.
  if (!state) return Promise.resolve();
  const previous = state.statusInFlight;
  const run = previous
    ? previous.catch(() => {}).then(() => syncStatusNow(ctx, key, signal, poll))
    : syncStatusNow(ctx, key, signal, poll);
  state.statusInFlight = run;
  const done = () => {
    if (state.statusInFlight === run) state.statusInFlight = undefined;
  };
  run.then(done, done);
  return run;
}

async function syncStatusNow(
  ctx: PodContext,
  key: string,
  signal: AbortSignal,
  poll: boolean,
): Promise<void> {
  const pod = ctx.pods.store.getByKey(key);
  if (!pod || (isTerminalPhase(pod.status?.phase) && !pod.metadata?.deletionTimestamp)) return;
  let found: boolean | undefined;
  if (poll || !ctx.states.get(key)?.providerStatus) {
    // In an outage the last known status is written, marked, rather than nothing.
    found = await pollStatus(ctx, pod, signal).catch((err) => {
      if (!unreachable(ctx)) throw err;
      return undefined;
    });
  }
  if (
    found === false && !unreachable(ctx) && wasRunningInOutage(pod) &&
    !ctx.states.get(key)?.localStatus
  ) {
    // Lost by the backend in the outage: the sync applies the restart policy; the last status
    // and its mark stay until it has.
    ctx.syncQueue.add(key);
    return;
  }
  // A pod never heard of since a restart in the outage: the API's status is the last known one.
  const desired = desiredStatus(ctx, key, pod) ??
    (unreachable(ctx) && pod.status
      ? { uid: pod.metadata?.uid ?? "", status: pod.status }
      : undefined);
  if (!desired) return;
  const status = markReachability(ctx, desired.status, pod.status);
  await writeStatus(ctx, pod, status === desired.status ? desired : { ...desired, status }, signal);
}

/** Asks the provider for the pod's status (`getPodStatus`, else `getPod`); false if it has none. */
export async function pollStatus(
  ctx: PodContext,
  pod: Pod,
  signal: AbortSignal,
): Promise<boolean> {
  const { namespace, name } = splitKey(podKeyOf(pod));
  let status: PodStatus | undefined;
  let uid = pod.metadata?.uid ?? "";
  if (ctx.provider.getPodStatus) {
    status = await ctx.provider.getPodStatus(namespace, name, { signal });
  } else {
    const running = await ctx.provider.getPod(namespace, name, { signal });
    status = running?.status;
    uid = running?.metadata?.uid ?? uid;
  }
  const state = ctx.states.get(podKeyOf(pod));
  if (status && state) state.providerStatus = withEphemeralWaiting(state, { uid, status });
  return status !== undefined;
}

function desiredStatus(ctx: PodContext, key: string, pod: Pod): UidStatus | undefined {
  const uid = pod.metadata?.uid;
  const state = ctx.states.get(key);
  const reported = state?.providerStatus;
  if (reported?.uid === uid) return reported;
  const local = state?.localStatus;
  return local?.uid === uid ? local : undefined;
}

async function writeStatus(
  ctx: PodContext,
  pod: Pod,
  desired: UidStatus,
  signal: AbortSignal,
): Promise<void> {
  const key = podKeyOf(pod);
  const hostIps = ctx.nodeIps();
  if (alreadyWritten(ctx.states.get(key)?.statusWritten, pod, desired, hostIps)) return;
  const remember = (basedOn: string | undefined, written: string | undefined): void => {
    // The pod may have gone and been forgotten while the write was on its way.
    const state = ctx.states.get(key);
    if (!state) return;
    state.statusWritten = { desired: desired.status, hostIps: hostIps.join(","), basedOn, written };
  };
  let current = pod;
  let eventsRecorded = false;
  for (let attempt = 0;; attempt++) {
    if (current.metadata?.uid !== desired.uid) return;
    // Never take a pod out of a terminal phase the API already holds.
    if (isTerminalPhase(current.status?.phase) && !isTerminalPhase(desired.status.phase)) return;
    const next = mergeStatus(current.status, desired.status, {
      hostIps,
      readinessGates: current.spec?.readinessGates,
      now: ctx.clock.now(),
    });
    if (statusEqual(current.status, next)) {
      return remember(current.metadata?.resourceVersion, current.metadata?.resourceVersion);
    }
    if (!eventsRecorded) {
      for (const event of lifecycleEvents(current, current.status, next)) {
        ctx.recorder.record(current, event);
      }
      eventsRecorded = true;
    }
    try {
      const update = { ...current, status: next };
      // The watch brings this status back: the cache is to share `next` (which shares the
      // provider's own objects, see mergeStatus) instead of holding a second copy of every pod's
      // status. Told before the write, as the watch event may come before the response.
      ctx.pods.expect?.(update);
      const written = await tracedStatusWrite(
        ctx,
        update,
        next.phase,
        () => ctx.api.pods.updateStatus(update, { signal }),
      );
      noteStarted(ctx, key, current.status, next);
      return remember(current.metadata?.resourceVersion, written?.metadata?.resourceVersion);
    } catch (err) {
      if (isKubeNotFound(err)) return;
      if (!isConflict(err) || attempt >= MAX_CONFLICT_RETRIES) throw err;
    }
    const { namespace, name } = splitKey(podKeyOf(pod));
    try {
      current = await ctx.api.pods.get(namespace, name, { signal });
    } catch (err) {
      // The Node authorizer answers 403 for a pod no longer bound here (deleted meanwhile).
      if (isKubeNotFound(err) || isForbidden(err)) return;
      throw err;
    }
  }
}

/**
 * True when the API holds `desired` already: we wrote it (or found it) at the pod's
 * resourceVersion, or wrote it over that resourceVersion and the informer has not caught up yet
 * (any later change by another writer has another resourceVersion and is looked at again).
 */
function alreadyWritten(
  memo: StatusMemo | undefined,
  pod: Pod,
  desired: UidStatus,
  hostIps: string[],
): boolean {
  if (!memo || memo.desired !== desired.status || memo.hostIps !== hostIps.join(",")) return false;
  const version = pod.metadata?.resourceVersion;
  return version !== undefined && (version === memo.written || version === memo.basedOn);
}

/**
 * Tells `onPodStarted` the seconds since the controller first saw the pod, when this write took
 * it from Pending to Running — as the kubelet observes `kubelet_pod_start_duration_seconds`
 * (kubernetes/kubernetes pkg/kubelet/kubelet.go, SyncPod).
 */
function noteStarted(
  ctx: PodContext,
  key: string,
  before: PodStatus | undefined,
  after: PodStatus,
) {
  const firstSeen = ctx.states.get(key)?.firstSeen;
  if (!ctx.onPodStarted || firstSeen === undefined) return;
  if ((before?.phase ?? "Pending") !== "Pending" || after.phase !== "Running") return;
  ctx.onPodStarted((ctx.clock.now() - firstSeen) / 1000);
}
