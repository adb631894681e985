/**
 * A container's effective security context as ECI's CreateContainerGroup fields. The pod's
 * context is merged under the container's by the kit's `effectiveSecurityContext`. ECI's API
 * (Alibaba's published metadata for CreateContainerGroup, and `@alicloud/eci20180808`) has, for a
 * container, `SecurityContext.RunAsUser`, `SecurityContext.ReadOnlyRootFilesystem`,
 * `SecurityContext.Capability.Add`, `SecurityContextRunAsGroup` and `SecurityContextRunAsNonRoot`;
 * for an init container only the first three. Nothing drops capabilities or sets
 * no_new_privs. What the API cannot express and that would make the container run with more power
 * than the pod asked (`capabilities.drop`, `allowPrivilegeEscalation: false`, `runAsNonRoot` or
 * `runAsGroup` on an init container without a field for them, a Localhost seccomp or AppArmor
 * profile, SELinux options, `privileged`) is refused with {@link InvalidInputError} naming the
 * field, so the pod fails rather than running as the image's user with every default capability.
 * @module
 */
import type { Container, PodSecurityContext } from "kubernetes-types/core/v1.d.ts";
import { effectiveSecurityContext, InvalidInputError } from "../../../provider/mod.ts";

/** The container fields of the create request that carry the security context. */
export interface EciSecurityFields {
  securityContext?: {
    runAsUser?: number;
    readOnlyRootFilesystem?: boolean;
    capability?: { add: string[] };
  };
  securityContextRunAsGroup?: number;
  securityContextRunAsNonRoot?: boolean;
}

/**
 * The ECI fields for container `c` (`field` is its path in the pod; `regular` false for an init
 * container); throws {@link InvalidInputError} for what ECI cannot enforce.
 */
export function eciSecurityFields(
  pod: PodSecurityContext | undefined,
  c: Container,
  field: string,
  regular: boolean,
): EciSecurityFields {
  const sc = effectiveSecurityContext(pod, c);
  const refuse = (path: string, why: string): never => {
    throw new InvalidInputError(`${field}.securityContext.${path}: ${why}`);
  };
  const kind = regular ? "a container" : "an init container";
  const noField = (path: string, then: string): never =>
    refuse(
      path,
      `ECI's API has no field for it on ${kind}, so ECI cannot enforce it; ${then}, or run ` +
        "the pod on a node that can",
    );
  if (sc.privileged) refuse("privileged", "ECI runs no privileged containers");
  if (sc.capabilities?.drop?.length) {
    noField("capabilities.drop", "remove it to run with ECI's default capabilities");
  }
  if (sc.allowPrivilegeEscalation === false) {
    noField("allowPrivilegeEscalation", "remove it (setuid programs in the image would work)");
  }
  // The kubelet checks runAsNonRoot against the uid the container will run as
  // (pkg/kubelet/kuberuntime/security_context_others.go `verifyRunAsNonRoot`): a set runAsUser
  // decides, and ECI runs the container as it.
  if (sc.runAsNonRoot && sc.runAsUser === 0) {
    refuse("runAsUser", "0 breaks the runAsNonRoot policy; set a non-zero uid");
  }
  if (sc.runAsNonRoot && sc.runAsUser === undefined && !regular) {
    noField("runAsNonRoot", "set runAsUser to a non-zero uid (ECI runs the container as it)");
  }
  if (sc.runAsGroup !== undefined && !regular) {
    noField("runAsGroup", "remove it to run with the image's group");
  }
  if (sc.seccompProfile?.type === "Localhost") {
    noField("seccompProfile", "ECI cannot read a profile from a node's disk; remove it");
  }
  if (sc.appArmorProfile?.type === "Localhost") noField("appArmorProfile", "remove it");
  if (sc.seLinuxOptions) noField("seLinuxOptions", "remove them");
  const add = sc.capabilities?.add;
  const out: EciSecurityFields = {};
  if (sc.runAsUser !== undefined || sc.readOnlyRootFilesystem || add?.length) {
    out.securityContext = {
      runAsUser: sc.runAsUser,
      readOnlyRootFilesystem: sc.readOnlyRootFilesystem,
      capability: add?.length ? { add } : undefined,
    };
  }
  if (regular && sc.runAsGroup !== undefined) out.securityContextRunAsGroup = sc.runAsGroup;
  if (regular && sc.runAsNonRoot) out.securityContextRunAsNonRoot = true;
  return out;
}
