/**
 * A container's effective security context as ACI's `securityContext` (api-version 2023-05-01,
 * `SecurityContextDefinition`: privileged, allowPrivilegeEscalation, capabilities add/drop,
 * runAsUser, runAsGroup, seccompProfile). The pod's context is merged under the container's, as
 * the kubelet does (kubernetes/kubernetes pkg/securitycontext/util.go
 * `DetermineEffectiveSecurityContext`). What ACI's API has no field for and that would make the
 * container run with more power than the pod asked (`runAsNonRoot` it cannot check,
 * `readOnlyRootFilesystem`, a Localhost seccomp or AppArmor profile, SELinux options) is refused
 * with {@link InvalidInputError} naming the field, so the pod fails rather than running as the
 * image's user with a writable root.
 * @module
 */
import type { Container, PodSecurityContext } from "kubernetes-types/core/v1.d.ts";
import { effectiveSecurityContext, InvalidInputError } from "../../provider/mod.ts";

/** ACI's `SecurityContextDefinition`. */
export interface AciSecurityContext {
  privileged?: boolean;
  allowPrivilegeEscalation?: boolean;
  capabilities?: { add?: string[]; drop?: string[] };
  runAsUser?: number;
  runAsGroup?: number;
}

/**
 * ACI's security context for container `c` (`where` is its path in the pod), or undefined when
 * nothing is asked; throws {@link InvalidInputError} for what ACI cannot enforce.
 */
export function aciSecurityContext(
  pod: PodSecurityContext | undefined,
  c: Container,
  where: string,
): AciSecurityContext | undefined {
  const sc = effectiveSecurityContext(pod, c);
  const refuse = (field: string, why: string): never => {
    throw new InvalidInputError(`${where}.securityContext.${field}: ${why}`);
  };
  const noField = (field: string, then: string): never =>
    refuse(
      field,
      `ACI's container API has no field for it, so ACI cannot enforce it; ${then}, or run the ` +
        "pod on a node that can",
    );
  // The kubelet checks runAsNonRoot against the uid the container will run as
  // (pkg/kubelet/kuberuntime/security_context_others.go `verifyRunAsNonRoot`): a set runAsUser
  // decides; without one it is the image's user, which ACI does not check and vkubelet cannot see.
  if (sc.runAsNonRoot && sc.runAsUser === 0) {
    refuse("runAsUser", "0 breaks the runAsNonRoot policy; set a non-zero uid");
  }
  if (sc.runAsNonRoot && sc.runAsUser === undefined) {
    noField("runAsNonRoot", "set runAsUser to a non-zero uid (ACI runs the container as it)");
  }
  if (sc.readOnlyRootFilesystem) {
    noField("readOnlyRootFilesystem", "remove it to run with a writable root filesystem");
  }
  if (sc.seccompProfile?.type === "Localhost") {
    noField("seccompProfile", "ACI cannot read a profile from a node's disk; remove it");
  }
  if (sc.appArmorProfile?.type === "Localhost") {
    noField("appArmorProfile", "remove it");
  }
  if (sc.seLinuxOptions) noField("seLinuxOptions", "remove them");
  const out: AciSecurityContext = {
    privileged: sc.privileged,
    allowPrivilegeEscalation: sc.allowPrivilegeEscalation,
    capabilities: sc.capabilities?.add?.length || sc.capabilities?.drop?.length
      ? {
        ...(sc.capabilities.add?.length ? { add: sc.capabilities.add } : {}),
        ...(sc.capabilities.drop?.length ? { drop: sc.capabilities.drop } : {}),
      }
      : undefined,
    runAsUser: sc.runAsUser,
    runAsGroup: sc.runAsGroup,
  };
  const set = Object.entries(out).filter(([, v]) => v !== undefined);
  return set.length ? Object.fromEntries(set) as AciSecurityContext : undefined;
}
