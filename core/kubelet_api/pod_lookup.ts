/**
 * Finding the pod and container a kubelet API path names, with the kubelet's 404 answers
 * (kubernetes/kubernetes pkg/kubelet/server/server.go: `pod %q does not exist`,
 * `container %q not found in pod %q`).
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { HttpError } from "./status.ts";
import type { PodCache } from "./types.ts";

/** The pod `namespace/name` from the cache; 404 if absent or if `uid` is given and differs. */
export async function findPod(
  podCache: PodCache,
  namespace: string,
  name: string,
  uid?: string,
): Promise<Pod> {
  const pods = await podCache();
  const pod = pods.find((p) => p.metadata?.namespace === namespace && p.metadata?.name === name);
  if (!pod || (uid !== undefined && pod.metadata?.uid !== uid)) {
    throw new HttpError(404, `pod "${name}" does not exist`);
  }
  return pod;
}

/** Checks that `pod` has a container (regular, init or ephemeral) named `container`; else 404. */
export function requireContainer(pod: Pod, container: string): void {
  const spec = pod.spec;
  const names = [
    ...(spec?.containers ?? []),
    ...(spec?.initContainers ?? []),
    ...(spec?.ephemeralContainers ?? []),
  ].map((c) => c.name);
  if (!names.includes(container)) {
    throw new HttpError(404, `container "${container}" not found in pod "${pod.metadata?.name}"`);
  }
}
