/**
 * The status worker for one key: writes the provider's status (or the controller's own, when the
 * provider has none) to the API with the pod's resourceVersion. The write is skipped when the
 * API already holds that status; on 409 Conflict the pod is read again and the write retried, so
 * a status another writer changed is put right again. Terminal pods are left alone, as the
 * kubelet never moves a pod out of Succeeded or Failed.
 * @module
 */
import type { Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import { isConflict, isForbidden, isNotFound as isApiNotFound } from "../../k8s/errors.ts";
import { podKey, splitKey } from "./api.ts";
import type { PodContext, UidStatus } from "./pod_context.ts";
import { isTerminal, lifecycleEvents, mergeStatus, statusEqual } from "./pod_status.ts";

const MAX_CONFLICT_RETRIES = 5;

/** Syncs the status of one key; `poll` asks the provider first (for providers that cannot push). */
export async function syncStatus(
  ctx: PodContext,
  key: string,
  signal: AbortSignal,
  poll: boolean,
): Promise<void> {
  const pod = ctx.pods.store.getByKey(key);
  if (!pod || (isTerminal(pod) && !pod.metadata?.deletionTimestamp)) return;
  if (poll || !ctx.providerStatus.has(key)) await pollStatus(ctx, pod, signal);
  const desired = desiredStatus(ctx, key, pod);
  if (desired) await writeStatus(ctx, pod, desired, signal);
}

/** Asks the provider for the pod's status (`getPodStatus`, else `getPod`). */
export async function pollStatus(ctx: PodContext, pod: Pod, signal: AbortSignal): Promise<void> {
  const { namespace, name } = splitKey(podKey(pod));
  let status: PodStatus | undefined;
  let uid = pod.metadata?.uid ?? "";
  if (ctx.provider.getPodStatus) {
    status = await ctx.provider.getPodStatus(namespace, name, { signal });
  } else {
    const running = await ctx.provider.getPod(namespace, name, { signal });
    status = running?.status;
    uid = running?.metadata?.uid ?? uid;
  }
  if (status) ctx.providerStatus.set(podKey(pod), { uid, status });
}

function desiredStatus(ctx: PodContext, key: string, pod: Pod): UidStatus | undefined {
  const uid = pod.metadata?.uid;
  const reported = ctx.providerStatus.get(key);
  if (reported?.uid === uid) return reported;
  const local = ctx.localStatus.get(key);
  return local?.uid === uid ? local : undefined;
}

async function writeStatus(
  ctx: PodContext,
  pod: Pod,
  desired: UidStatus,
  signal: AbortSignal,
): Promise<void> {
  const key = podKey(pod);
  const hostIps = ctx.nodeIps();
  const seen = ctx.statusWritten.get(key);
  if (
    seen?.desired === desired.status && seen.resourceVersion === pod.metadata?.resourceVersion &&
    seen.hostIps === hostIps.join(",")
  ) return;
  const remember = (resourceVersion: string | undefined): void => {
    ctx.statusWritten.set(key, {
      resourceVersion,
      desired: desired.status,
      hostIps: hostIps.join(","),
    });
  };
  let current = pod;
  let eventsRecorded = false;
  for (let attempt = 0;; attempt++) {
    if (current.metadata?.uid !== desired.uid) return;
    // Never take a pod out of a terminal phase the API already holds.
    if (isTerminal(current) && !isTerminalStatus(desired.status)) return;
    const next = mergeStatus(current.status, desired.status, hostIps);
    if (statusEqual(current.status, next)) return remember(current.metadata?.resourceVersion);
    if (!eventsRecorded) {
      for (const event of lifecycleEvents(current, current.status, next)) {
        ctx.recorder.record(current, event);
      }
      eventsRecorded = true;
    }
    try {
      const written = await ctx.api.pods.updateStatus({ ...current, status: next }, { signal });
      return remember(written?.metadata?.resourceVersion);
    } catch (err) {
      if (isApiNotFound(err)) return;
      if (!isConflict(err) || attempt >= MAX_CONFLICT_RETRIES) throw err;
    }
    const { namespace, name } = splitKey(podKey(pod));
    try {
      current = await ctx.api.pods.get(namespace, name, { signal });
    } catch (err) {
      // The Node authorizer answers 403 for a pod no longer bound here (deleted meanwhile).
      if (isApiNotFound(err) || isForbidden(err)) return;
      throw err;
    }
  }
}

function isTerminalStatus(status: PodStatus): boolean {
  return status.phase === "Succeeded" || status.phase === "Failed";
}
