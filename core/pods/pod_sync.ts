/**
 * One pass of the pod worker for one key: make the provider match the API. Runs in the sync
 * queue, one key at a time per key. Follows virtual-kubelet's node/pod.go `syncPodInProvider`,
 * with its known failures fixed: a pod whose provider call fails keeps being retried with backoff
 * instead of sitting Pending (virtual-kubelet#1257); a deleting pod's object is removed as soon as
 * its containers have stopped or its grace period has run out, from any state; a DaemonSet pod
 * cannot turn into a create/fail loop.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { isConflict, isKubeNotFound } from "../../k8s/errors.ts";
import {
  isInvalidInput,
  isNotFound,
  isTerminalPhase,
  podKeyOf,
  TransientError,
} from "../../provider/mod.ts";
import type { PodContext } from "./pod_context.ts";
import { isEnvResolutionError, resolvePodEnv } from "./env.ts";
import { startEphemeralContainers } from "./ephemeral.ts";
import { canonicalEqual } from "./pod_status.ts";
import {
  failForProviderError,
  failLostPod,
  holdDaemonSetPod,
  holdForConfigError,
  holdForProviderError,
} from "./controller_status.ts";
import { preflight } from "./preflight.ts";
import type { ProcessResult } from "./work_queue.ts";
import { tracedProvider } from "./pod_traces.ts";
import { unreachable, wasRunningInOutage } from "./outage.ts";

/** Syncs one pod key; throws to be retried with backoff. */
export async function syncPod(
  ctx: PodContext,
  key: string,
  signal: AbortSignal,
): Promise<ProcessResult | void> {
  const pod = ctx.pods.store.getByKey(key);
  if (!pod) return await forgetPod(ctx, key, signal);
  ctx.states.ensure(key).lastKnown = pod;
  if (pod.metadata?.deletionTimestamp) return await syncDeleting(ctx, pod, signal);
  if (isTerminalPhase(pod.status?.phase)) {
    ctx.configSources.untrack(key);
    return;
  }
  if (isDaemonSetPod(pod) && ctx.daemonSetPods === "skip") return skipDaemonSetPod(ctx, pod);
  await syncRunning(ctx, pod, signal);
}

/**
 * The API object is gone: stop the pod in the provider if it still runs that uid, then forget
 * everything about the key (the one place a pod is forgotten).
 */
async function forgetPod(ctx: PodContext, key: string, signal: AbortSignal): Promise<void> {
  const last = ctx.states.get(key)?.lastKnown;
  if (last) {
    const [namespace, name] = [last.metadata!.namespace!, last.metadata!.name!];
    const running = await ctx.provider.getPod(namespace, name, { signal });
    if (running && running.metadata?.uid === last.metadata?.uid) {
      await deleteInProvider(ctx, last, signal);
    }
  }
  // That uid is gone for good (a new pod of the same name has another): its events' state too.
  if (last?.metadata?.uid) ctx.recorder.forgetPod(last.metadata.uid);
  // A new pod of the same name may have been added meanwhile: its record stays.
  if (!ctx.pods.store.getByKey(key)) ctx.states.forget(key);
}

async function syncRunning(ctx: PodContext, pod: Pod, signal: AbortSignal): Promise<void> {
  const key = podKeyOf(pod);
  if (unreachable(ctx)) {
    // Neither created nor updated on an answer given in an outage; tried again after it.
    throw new TransientError(
      `the provider cannot reach its backend; ${key} is synced once it can`,
      {
        retryAfterMs: 10_000,
      },
    );
  }
  ctx.configSources.track(key, pod);
  if (!await preflight(ctx, pod, signal)) return;
  let resolved;
  try {
    resolved = await resolvePodEnv(pod, ctx.envSources, ctx.addresses(key, pod), {
      signal,
      deferredFieldPaths: ctx.provider.deferredFieldPaths,
      secretEnvRefs: ctx.provider.secretEnvRefs,
      sharedParts: ctx.resolvedParts,
    });
  } catch (err) {
    if (!isEnvResolutionError(err)) throw err;
    // The kubelet's CreateContainerConfigError: event, waiting container, retry with backoff.
    ctx.recorder.record(pod, {
      type: "Warning",
      reason: "Failed",
      message: `Error: ${err.message}`,
      fieldPath: err.fieldPath,
    });
    if (err.event) ctx.recorder.record(pod, err.event);
    holdForConfigError(ctx, pod, { container: err.container });
    throw err;
  }
  const existing = await ctx.provider.getPod(pod.metadata!.namespace!, pod.metadata!.name!, {
    signal,
  });
  if (!existing && wasRunningInOutage(pod) && !lostInOutage(ctx, pod)) return;
  const sameUid = existing?.metadata?.uid === pod.metadata?.uid;
  if (existing && !sameUid) await deleteInProvider(ctx, existing, signal);
  if (existing && sameUid) {
    if (sameSpec(existing, resolved.pod)) return markSynced(ctx, key, pod);
    const update = async () => {
      await ctx.provider.updatePod(resolved.pod, { signal });
      await startEphemeralContainers(ctx, resolved.pod, signal);
    };
    if (!await providerCall(ctx, pod, "Update", update)) return;
  } else {
    const create = async () => {
      await ctx.provider.createPod(resolved.pod, { signal });
      await startEphemeralContainers(ctx, resolved.pod, signal);
    };
    if (!await providerCall(ctx, pod, "Create", create)) return;
  }
  for (const event of resolved.events) ctx.recorder.record(pod, event);
  markSynced(ctx, key, pod);
  // The provider runs the pod now: a status the controller held it with is not written again.
  ctx.states.ensure(key).localStatus = undefined;
  ctx.statusQueue.add(key);
}

/**
 * A pod that was running when the outage began is gone from the provider after it: the backend
 * lost it. Its restart policy decides, as for a container the kubelet can no longer find:
 * `Never` ends it Failed (false: nothing to create); `Always` and `OnFailure` start it again
 * (true), with a warning event either way.
 */
function lostInOutage(ctx: PodContext, pod: Pod): boolean {
  const policy = pod.spec?.restartPolicy ?? "Always";
  const again = policy !== "Never";
  ctx.recorder.record(pod, {
    type: "Warning",
    reason: "BackendLostPod",
    message: `the backend lost the pod while the provider could not reach it; restartPolicy ` +
      `${policy}: ${again ? "starting it again" : "the pod fails"}`,
  });
  ctx.log.warn("the backend lost {pod} during the outage; restartPolicy {policy}", {
    pod: podKeyOf(pod),
    policy,
  });
  // What the provider reported before the outage no longer holds.
  ctx.states.ensure(podKeyOf(pod)).providerStatus = undefined;
  if (!again) failLostPod(ctx, pod);
  return again;
}

/**
 * Notes the resourceVersion the provider now runs. A status write may have moved the cached pod
 * on meanwhile; if nothing the provider runs changed with it, the newer version is in step too.
 */
function markSynced(ctx: PodContext, key: string, pod: Pod): void {
  const latest = ctx.pods.store.getByKey(key);
  const version = pod.metadata?.resourceVersion ?? "";
  const moved = latest && latest.metadata?.resourceVersion !== version &&
    latest.metadata?.uid === pod.metadata?.uid && !latest.metadata?.deletionTimestamp &&
    sameSpec(latest, pod);
  ctx.states.ensure(key).syncedVersion = moved ? latest.metadata?.resourceVersion ?? "" : version;
}

/**
 * Calls the provider; on failure records `Provider<Op>Failed` and either marks the pod Failed
 * (permanent error: returns false) or throws to be retried (transient or unknown error).
 */
async function providerCall(
  ctx: PodContext,
  pod: Pod,
  op: "Create" | "Update",
  call: () => Promise<void>,
): Promise<boolean> {
  try {
    await tracedProvider(ctx, pod, `${op.toLowerCase()}Pod`, call);
    return true;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    ctx.recorder.record(pod, { type: "Warning", reason: `Provider${op}Failed`, message });
    // A DaemonSet pod marked Failed is replaced at once on the same node: keep it Pending.
    if (isInvalidInput(err) && !isDaemonSetPod(pod)) {
      failForProviderError(ctx, pod, message);
      return false;
    }
    if (op === "Create") holdForProviderError(ctx, pod, message);
    throw err;
  }
}

/**
 * A pod with a deletionTimestamp: the provider stops it at once; the object is removed (grace 0,
 * uid precondition) once its containers have stopped, or when the grace period has passed —
 * once: a sync after the removal was asked for does nothing.
 */
async function syncDeleting(
  ctx: PodContext,
  pod: Pod,
  signal: AbortSignal,
): Promise<ProcessResult | void> {
  const key = podKeyOf(pod);
  const uid = pod.metadata!.uid!;
  ctx.configSources.untrack(key);
  const record = ctx.states.ensure(key);
  if (record.deletion?.uid !== uid) {
    record.deletion = { uid, firstSeen: ctx.clock.now(), providerTold: false, removed: false };
  }
  const deletion = record.deletion;
  if (deletion.removal) return;
  if (!deletion.providerTold) {
    for (const c of runningContainers(ctx, key, pod)) {
      ctx.recorder.record(pod, {
        type: "Normal",
        reason: "Killing",
        message: `Stopping container ${c}`,
        fieldPath: `spec.containers{${c}}`,
      });
    }
    await deleteInProvider(ctx, pod, signal);
    deletion.providerTold = true;
  }
  const graceMs = (pod.metadata?.deletionGracePeriodSeconds ?? 0) * 1000;
  const deadline = Math.min(
    Date.parse(pod.metadata!.deletionTimestamp!),
    deletion.firstSeen + graceMs,
  );
  const stopped = await containersStopped(ctx, pod, signal);
  const remaining = deadline - ctx.clock.now();
  if (!stopped && remaining > 0) return { requeueAfterMs: Math.min(remaining, 5_000) };
  ctx.removeObject(pod);
}

async function deleteInProvider(ctx: PodContext, pod: Pod, signal: AbortSignal): Promise<void> {
  // Its ephemeral containers are no longer reported waiting: nothing of the pod runs on.
  const state = ctx.states.get(podKeyOf(pod));
  if (state && state.ephemeralWaiting?.uid === pod.metadata?.uid) {
    state.ephemeralWaiting = undefined;
  }
  try {
    await tracedProvider(ctx, pod, "deletePod", () => ctx.provider.deletePod(pod, { signal }));
  } catch (err) {
    if (isNotFound(err)) return;
    const message = err instanceof Error ? err.message : String(err);
    ctx.recorder.record(pod, { type: "Warning", reason: "ProviderDeleteFailed", message });
    throw err;
  }
}

async function containersStopped(ctx: PodContext, pod: Pod, signal: AbortSignal): Promise<boolean> {
  const key = podKeyOf(pod);
  const existing = await ctx.provider.getPod(pod.metadata!.namespace!, pod.metadata!.name!, {
    signal,
  });
  if (!existing || existing.metadata?.uid !== pod.metadata?.uid) return true;
  return runningContainers(ctx, key, existing).length === 0;
}

function runningContainers(ctx: PodContext, key: string, pod: Pod): string[] {
  const reported = ctx.states.get(key)?.providerStatus;
  const status = reported && reported.uid === pod.metadata?.uid ? reported.status : pod.status;
  return [...status?.containerStatuses ?? [], ...status?.initContainerStatuses ?? []]
    .filter((s) => s.state?.running).map((s) => s.name);
}

/** Deletes the API object with grace 0, only if it is still the same pod (uid precondition). */
export async function removePodObject(
  ctx: PodContext,
  pod: Pod,
  signal: AbortSignal,
): Promise<void> {
  try {
    await ctx.api.pods.delete(pod.metadata!.namespace!, pod.metadata!.name!, {
      gracePeriodSeconds: 0,
      preconditions: { uid: pod.metadata!.uid },
      signal,
    });
  } catch (err) {
    // Gone already, or a new pod of the same name: nothing of ours is left to delete.
    if (!isKubeNotFound(err) && !isConflict(err)) throw err;
  }
}

/** True when a DaemonSet controls the pod. */
export function isDaemonSetPod(pod: Pod): boolean {
  return (pod.metadata?.ownerReferences ?? []).some((o) => o.kind === "DaemonSet" && o.controller);
}

function skipDaemonSetPod(ctx: PodContext, pod: Pod): void {
  const message = "DaemonSet pods are not run on this virtual node (daemonSetPods: skip)";
  if (pod.status?.reason === "DaemonSetPodSkipped") return;
  ctx.recorder.record(pod, { type: "Warning", reason: "DaemonSetPodSkipped", message });
  holdDaemonSetPod(ctx, pod, message);
}

/** True when the parts of two pods that updatePod can change are equal. */
export function sameSpec(a: Pod, b: Pod): boolean {
  // Versions from the informer share what did not change (k8s/watch/share.ts), so this answers
  // at once for nearly every update (status writes); the canonical form (empty values, times)
  // for the rest.
  return canonicalEqual(specParts(a), specParts(b));
}

function specParts(pod: Pod) {
  return {
    labels: pod.metadata?.labels,
    annotations: pod.metadata?.annotations,
    containers: pod.spec?.containers,
    initContainers: pod.spec?.initContainers,
    ephemeralContainers: pod.spec?.ephemeralContainers,
    activeDeadlineSeconds: pod.spec?.activeDeadlineSeconds,
  };
}
