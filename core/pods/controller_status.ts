/**
 * The statuses the controller writes itself, when the provider has none for the pod: the sync
 * held the pod back before the provider saw it (a volume not ready, an image that does not
 * parse, an env var that cannot be resolved, a DaemonSet pod skipped), the provider refused it,
 * or its backend lost it in an outage. One entry point per reason, called from the sync where the
 * decision is taken; each builds the status with the kit's builder, keeps it as the pod's own
 * status (`PodState.localStatus`) and queues its write. The status worker (`status_sync.ts`)
 * writes it as it writes a provider's report, until the provider reports (or runs the pod: the
 * sync then drops it).
 * @module
 */
import type { Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import {
  buildPodStatus,
  type ContainerReport,
  formatTime,
  podKeyOf,
  unknownEnd,
} from "../../provider/mod.ts";
import type { PodContext } from "./pod_context.ts";
import type { WorkQueue } from "./work_queue.ts";

/** What the entry points use of the controller: its clock, its records and its status queue. */
export type StatusContext = Pick<PodContext, "clock" | "states"> & {
  statusQueue: Pick<WorkQueue, "add">;
};

/** A volume source of the pod is missing: Pending, every container ContainerCreating. */
export function holdForVolumes(ctx: StatusContext, pod: Pod): void {
  hold(ctx, pod, controllerStatus(pod, { phase: "Pending", nowMs: ctx.clock.now() }));
}

/** Options for {@link holdForInvalidImage}. */
export interface InvalidImage {
  /** The container whose image does not parse. */
  container: string;
  /** The image manager's message, the container's waiting message. */
  message: string;
}

/** A container's image does not parse: Pending, that container waiting `InvalidImageName`. */
export function holdForInvalidImage(ctx: StatusContext, pod: Pod, image: InvalidImage): void {
  const waiting = {
    container: image.container,
    reason: "InvalidImageName",
    message: image.message,
  };
  hold(ctx, pod, controllerStatus(pod, { phase: "Pending", waiting, nowMs: ctx.clock.now() }));
}

/**
 * A container's env cannot be resolved: Pending, that container (every one when none is named)
 * waiting `CreateContainerConfigError`.
 */
export function holdForConfigError(
  ctx: StatusContext,
  pod: Pod,
  error: { container?: string },
): void {
  const waiting = { container: error.container, reason: "CreateContainerConfigError" };
  hold(ctx, pod, controllerStatus(pod, { phase: "Pending", waiting, nowMs: ctx.clock.now() }));
}

/** The provider could not create the pod and is asked again: Pending, `ProviderFailed`. */
export function holdForProviderError(ctx: StatusContext, pod: Pod, message: string): void {
  hold(ctx, pod, podLevel(ctx, pod, "Pending", "ProviderFailed", message));
}

/** The provider refused the pod for good (invalid input): Failed, `ProviderFailed`. */
export function failForProviderError(ctx: StatusContext, pod: Pod, message: string): void {
  hold(ctx, pod, podLevel(ctx, pod, "Failed", "ProviderFailed", message));
}

/** A DaemonSet pod this node does not run (`daemonSetPods: skip`): Pending, `DaemonSetPodSkipped`. */
export function holdDaemonSetPod(ctx: StatusContext, pod: Pod, message: string): void {
  hold(ctx, pod, podLevel(ctx, pod, "Pending", "DaemonSetPodSkipped", message));
}

/**
 * The backend lost the pod in an outage and its restart policy does not start it again: Failed,
 * `BackendLostPod` (see {@link lostPodStatus}).
 */
export function failLostPod(ctx: StatusContext, pod: Pod): void {
  hold(ctx, pod, lostPodStatus(pod, ctx.clock.now()));
}

/** Keeps `status` as the pod's own and queues its write. */
function hold(ctx: StatusContext, pod: Pod, status: PodStatus): void {
  const key = podKeyOf(pod);
  ctx.states.ensure(key).localStatus = { uid: pod.metadata?.uid ?? "", status };
  ctx.statusQueue.add(key);
}

/** A status with a pod-level reason and message, no container at fault. */
function podLevel(
  ctx: StatusContext,
  pod: Pod,
  phase: "Pending" | "Failed",
  reason: string,
  message: string,
): PodStatus {
  return controllerStatus(pod, { phase, reason, message, nowMs: ctx.clock.now() });
}

/** What the controller decided for a pod it holds back itself; see {@link controllerStatus}. */
export interface HeldStatus {
  phase: "Pending" | "Failed";
  /** The pod-level reason and message (`ProviderFailed`, say); default none. */
  reason?: string;
  message?: string;
  /** The container at fault (every container when none is named) waits for this reason. */
  waiting?: { container?: string; reason: string; message?: string };
  /** Now (clock ms): the transition time of the conditions that changed. */
  nowMs: number;
}

/**
 * The status the controller writes when the provider has none for the pod, built by the kit's
 * builder like any provider's: every container waiting (`waiting.reason` for the one at fault,
 * ContainerCreating for the others) and the five conditions the kubelet always writes, in its
 * order (provider/pod_conditions.ts). Fields the builder does not set (IPs, say) are kept.
 */
export function controllerStatus(pod: Pod, held: HeldStatus): PodStatus {
  const { phase, waiting } = held;
  const containers: Record<string, ContainerReport> = {};
  for (const c of pod.spec?.containers ?? []) {
    const previous = pod.status?.containerStatuses?.find((s) => s.name === c.name);
    const here = waiting && (!waiting.container || waiting.container === c.name);
    const reason = here ? waiting.reason : "ContainerCreating";
    const message = here ? waiting.message : undefined;
    containers[c.name] = {
      state: { waiting: { reason, ...(message ? { message } : {}) } },
      restartCount: previous?.restartCount ?? 0,
      imageID: previous?.imageID ?? "",
    };
  }
  const built = buildPodStatus(pod, {
    containers,
    nowMs: held.nowMs,
    // A container waiting for a reason of its own (its config, its image) means the kubelet had
    // the pod's sandbox; one waiting in ContainerCreating (volumes, the provider) means it had not.
    sandboxReady: phase === "Pending" && !!waiting && waiting.reason !== "ContainerCreating",
    // A pod the controller fails runs nothing again: the builder ends it Failed.
    terminal: phase === "Failed",
  });
  return { ...pod.status, ...built, phase, reason: held.reason ?? "", message: held.message ?? "" };
}

/**
 * The status of a pod the backend lost during an outage and the restart policy does not start
 * again: Failed, its containers terminated `ContainerStatusUnknown` (exit code 137) as the
 * kubelet reports a container it can no longer find (kubernetes/kubernetes
 * pkg/kubelet/kubelet_pods.go).
 */
export function lostPodStatus(pod: Pod, nowMs: number): PodStatus {
  // The kit's one rule for an end vkubelet infers (provider/container_end.ts).
  const lost = unknownEnd("terminated", { nowMs });
  const message = "the backend lost the pod while the provider could not reach it; " +
    "restartPolicy Never does not start it again";
  const status = controllerStatus(pod, {
    phase: "Failed",
    reason: "BackendLostPod",
    message,
    nowMs,
  });
  const finishedAt = formatTime(nowMs);
  const containerStatuses = (status.containerStatuses ?? []).map((c) => {
    const before = pod.status?.containerStatuses?.find((p) => p.name === c.name);
    return {
      ...c,
      ready: false,
      started: false,
      state: {
        terminated: {
          exitCode: lost.exitCode,
          reason: lost.reason,
          message: lost.message,
          startedAt: before?.state?.running?.startedAt,
          finishedAt,
        },
      },
      ...(before?.state ? { lastState: {} } : {}),
    };
  });
  return { ...status, containerStatuses };
}
