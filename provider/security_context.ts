/**
 * A container's effective security context: the pod's context merged under the container's, as
 * the kubelet does (kubernetes/kubernetes pkg/securitycontext/util.go
 * `DetermineEffectiveSecurityContext`, whose `securityContextFromPodSecurityContext` names the
 * fields a container inherits).
 * @module
 */
import type { Container, PodSecurityContext, SecurityContext } from "kubernetes-types/core/v1.d.ts";

/** The fields of the pod's context a container inherits unless it sets them itself. */
const INHERITED = [
  "runAsUser",
  "runAsGroup",
  "runAsNonRoot",
  "seccompProfile",
  "seLinuxOptions",
  "appArmorProfile",
  "windowsOptions",
] as const;

/**
 * The container's security context with the pod's inherited fields under it (a new object;
 * the container's value wins where both are set).
 *
 * @example Usage
 * ```ts
 * import { effectiveSecurityContext } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * const pod = { runAsUser: 1000, runAsNonRoot: true, fsGroup: 2000 };
 * const container = { name: "main", securityContext: { runAsUser: 1001 } };
 * assert.deepEqual(effectiveSecurityContext(pod, container), {
 *   runAsUser: 1001,
 *   runAsNonRoot: true,
 * });
 * ```
 */
export function effectiveSecurityContext(
  pod: PodSecurityContext | undefined,
  container: Pick<Container, "securityContext">,
): SecurityContext {
  const merged: SecurityContext = { ...container.securityContext };
  for (const key of INHERITED) {
    if (merged[key] === undefined && pod?.[key] !== undefined) {
      (merged as Record<string, unknown>)[key] = structuredClone(pod[key]);
    }
  }
  return merged;
}
