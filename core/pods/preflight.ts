/**
 * What the kubelet checks before it creates a pod's containers, done in the core so that every
 * provider gets it: the volumes' sources exist (pkg/kubelet/volumemanager: `FailedMount` events,
 * the pod stays Pending with its containers `ContainerCreating`, retried with backoff until the
 * object appears), then each image reference parses (pkg/kubelet/images/image_manager.go:
 * `InspectFailed` event, container waiting `InvalidImageName`; the provider never sees the pod).
 * @module
 */
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import { isKubeNotFound } from "../../k8s/errors.ts";
import type { PodContext } from "./pod_context.ts";
import { invalidImageMessage } from "./image_reference.ts";
import { holdForInvalidImage, holdForVolumes } from "./controller_status.ts";
import { checkVolumes, type VolumeSources } from "./volume_check.ts";

/** Some volume of the pod cannot be set up yet; the sync is retried with backoff. */
export class VolumesNotReadyError extends Error {
  override name = "VolumesNotReadyError";
}

/**
 * Runs the checks for `pod`. Resolves true when the pod may go to the provider, false when it
 * was reported and only a change of its spec can help (an invalid image); throws
 * {@link VolumesNotReadyError} (after recording events and status) to be retried with backoff.
 */
export async function preflight(ctx: PodContext, pod: Pod, signal: AbortSignal): Promise<boolean> {
  const failures = await checkVolumes(pod, volumeSources(ctx), { signal });
  if (failures.length > 0) {
    for (const failure of failures) {
      ctx.recorder.record(pod, {
        type: "Warning",
        reason: "FailedMount",
        message: failure.message,
      });
    }
    holdForVolumes(ctx, pod);
    throw new VolumesNotReadyError(
      `pod ${pod.metadata?.namespace}/${pod.metadata?.name} waits for its volumes: ` +
        failures.map((f) => f.message).join("; "),
    );
  }
  return reportInvalidImage(ctx, pod);
}

function volumeSources(ctx: PodContext): VolumeSources {
  return {
    configMap: (ns, name, o) => ctx.envSources.configMap(ns, name, o),
    secret: (ns, name, o) => ctx.envSources.secret(ns, name, o),
    persistentVolumeClaim: async (ns, name, o) => {
      try {
        return await ctx.api.persistentVolumeClaims.get(ns, name, o);
      } catch (err) {
        if (isKubeNotFound(err)) return undefined;
        throw err;
      }
    },
  };
}

/** Records the first container whose image cannot be parsed; false when there is one. */
function reportInvalidImage(ctx: PodContext, pod: Pod): boolean {
  const lists = [
    ["initContainers", pod.spec?.initContainers],
    ["containers", pod.spec?.containers],
  ] as const;
  for (const [list, containers] of lists) {
    for (const container of (containers ?? []) as Container[]) {
      // The apiserver requires an image on a pod's containers; one without is a test's pod.
      if (!container.image) continue;
      const message = invalidImageMessage(container.image);
      if (message === undefined) continue;
      ctx.recorder.record(pod, {
        type: "Warning",
        reason: "InspectFailed",
        message,
        fieldPath: `spec.${list}{${container.name}}`,
      });
      // The kubelet's waiting message is the image manager's; the pod itself carries none.
      holdForInvalidImage(ctx, pod, { container: container.name, message });
      return false;
    }
  }
  return true;
}
