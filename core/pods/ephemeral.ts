/**
 * Ephemeral containers (`kubectl debug`): the apiserver adds them to `spec.ephemeralContainers`
 * of a running pod, and the kubelet starts each once (pkg/kubelet/kuberuntime
 * `computePodActions` → `EphemeralContainersToStart`) and reports it in
 * `status.ephemeralContainerStatuses`. After a create or update the pod worker calls
 * {@link startEphemeralContainers}, which starts, through the provider's `runEphemeralContainer`,
 * every ephemeral container the provider reports no status for. A provider without that
 * capability gets its ephemeral containers reported waiting (`EphemeralContainersNotSupported`)
 * with a Warning event, instead of the silence that leaves `kubectl debug -i` hanging; which ones
 * is part of the pod's record (`PodState.ephemeralWaiting`), forgotten with it.
 * @module
 */
import type { ContainerStatus, Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import { isTransient, podKeyOf } from "../../provider/mod.ts";
import type { PodContext } from "./pod_context.ts";
import type { PodState, UidStatus } from "./pod_state.ts";

/** The waiting reason (and event reason) for a provider that cannot run ephemeral containers. */
export const EPHEMERAL_NOT_SUPPORTED = "EphemeralContainersNotSupported";

/** Starts or reports the pod's new ephemeral containers; see the module doc. */
export async function startEphemeralContainers(
  ctx: PodContext,
  pod: Pod,
  signal: AbortSignal,
): Promise<void> {
  const wanted = pod.spec?.ephemeralContainers ?? [];
  if (wanted.length === 0) return;
  const { namespace = "", name = "" } = pod.metadata ?? {};
  const running = await ctx.provider.getPod(namespace, name, { signal });
  const known = new Set((running?.status?.ephemeralContainerStatuses ?? []).map((s) => s.name));
  const fresh = wanted.filter((c) => !known.has(c.name));
  if (fresh.length === 0) return;
  if (!ctx.provider.runEphemeralContainer) return reportUnsupported(ctx, pod, fresh);
  for (const c of fresh) {
    try {
      await ctx.provider.runEphemeralContainer(pod, c.name, { signal });
    } catch (err) {
      // A debug container that cannot start must not fail the pod it debugs.
      if (isTransient(err)) throw err;
      ctx.recorder.record(pod, {
        type: "Warning",
        reason: "Failed",
        message: `Error: ${err instanceof Error ? err.message : String(err)}`,
        fieldPath: `spec.ephemeralContainers{${c.name}}`,
      });
    }
  }
}

/** Records the containers the provider cannot run (one event each) and reports them waiting. */
function reportUnsupported(ctx: PodContext, pod: Pod, fresh: { name: string; image?: string }[]) {
  const key = podKeyOf(pod);
  const uid = pod.metadata?.uid ?? "";
  const state = ctx.states.ensure(key);
  if (state.ephemeralWaiting?.uid !== uid) state.ephemeralWaiting = { uid, names: new Map() };
  const { names } = state.ephemeralWaiting;
  for (const c of fresh) {
    if (names.has(c.name)) continue;
    names.set(c.name, c.image ?? "");
    ctx.recorder.record(pod, {
      type: "Warning",
      reason: EPHEMERAL_NOT_SUPPORTED,
      message: `Ephemeral container ${c.name} cannot start: ${notSupported}`,
      fieldPath: `spec.ephemeralContainers{${c.name}}`,
    });
  }
  // The provider's last report did not know about them: report them now.
  if (state.providerStatus) {
    state.providerStatus = withEphemeralWaiting(state, state.providerStatus);
    ctx.statusQueue.add(key);
  }
}

/**
 * `reported` with the pod's ephemeral containers the provider cannot run, waiting (those of the
 * same uid it reports no status for); `reported` itself when there are none.
 */
export function withEphemeralWaiting(state: PodState, reported: UidStatus): UidStatus {
  const waiting = state.ephemeralWaiting;
  if (!waiting || waiting.uid !== reported.uid) return reported;
  const status = withWaiting(reported.status, waiting.names);
  return status === reported.status ? reported : { uid: reported.uid, status };
}

const notSupported = "this node's provider cannot run ephemeral containers (kubectl debug); " +
  "debug with kubectl exec, or run the pod on a node whose provider supports them";

function withWaiting(status: PodStatus, names: Map<string, string>): PodStatus {
  const reported = status.ephemeralContainerStatuses ?? [];
  const waiting = [...names].filter(([name]) => !reported.some((s) => s.name === name))
    .map(([name, image]): ContainerStatus => ({
      name,
      image,
      imageID: "",
      ready: false,
      restartCount: 0,
      state: { waiting: { reason: EPHEMERAL_NOT_SUPPORTED, message: notSupported } },
    }));
  if (waiting.length === 0) return status;
  return { ...status, ephemeralContainerStatuses: [...reported, ...waiting] };
}
