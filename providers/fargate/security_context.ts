/**
 * A container's effective security context as ECS container-definition fields: the pod's
 * `securityContext` under the container's own (the kit's `effectiveSecurityContext`), then
 * `runAsUser`/`runAsGroup` → `user`, `readOnlyRootFilesystem`, and capabilities → ECS
 * `linuxParameters.capabilities` (Fargate adds only `SYS_PTRACE`; any may be dropped).
 * @module
 */
import type { ContainerDefinition } from "@aws-sdk/client-ecs";
import type { Container, PodSecurityContext } from "kubernetes-types/core/v1.d.ts";
import { effectiveSecurityContext, InvalidInputError } from "../../provider/mod.ts";

/** The ECS fields that carry a container's security context. */
export type ContainerSecurity = Pick<
  ContainerDefinition,
  "user" | "readonlyRootFilesystem" | "linuxParameters"
>;

/** ECS capability names: no `CAP_` prefix, upper case (`ALL` stays `ALL`). */
const capabilityName = (cap: string) => cap.toUpperCase().replace(/^CAP_/, "");

/**
 * The ECS security fields of container `c` (`field` is its path in the pod, for messages);
 * throws {@link InvalidInputError} for what Fargate cannot do or vkubelet cannot check.
 */
export function containerSecurity(
  pod: PodSecurityContext | undefined,
  c: Container,
  field: string,
): ContainerSecurity {
  const refuse = (path: string, why: string): never => {
    throw new InvalidInputError(`${field}.securityContext.${path}: ${why}`);
  };
  const sc = effectiveSecurityContext(pod, c);
  if (sc.privileged) refuse("privileged", "Fargate runs no privileged containers");
  const added = (sc.capabilities?.add ?? []).map(capabilityName);
  const notPtrace = added.find((cap) => cap !== "SYS_PTRACE");
  if (notPtrace) {
    refuse("capabilities.add", `Fargate adds only SYS_PTRACE, not ${notPtrace}; remove it`);
  }
  // The kubelet checks runAsNonRoot against the user the container will run as
  // (pkg/kubelet/kuberuntime/security_context_others.go `verifyRunAsNonRoot`); without
  // runAsUser that is the image's user, which vkubelet cannot see before ECS pulls the image.
  if (sc.runAsNonRoot && sc.runAsUser === undefined) {
    refuse(
      "runAsNonRoot",
      "Fargate cannot check the image's user before it runs; set runAsUser to a non-zero uid (in the pod's or the container's securityContext)",
    );
  }
  if (sc.runAsNonRoot && sc.runAsUser === 0) {
    refuse("runAsUser", "0 breaks the runAsNonRoot policy; set a non-zero uid");
  }
  if (sc.runAsGroup !== undefined && sc.runAsUser === undefined) {
    refuse(
      "runAsGroup",
      "ECS's user field names a group only after a user; set runAsUser too (in the pod's or the container's securityContext)",
    );
  }
  const user = sc.runAsUser === undefined
    ? undefined
    : `${sc.runAsUser}${sc.runAsGroup === undefined ? "" : `:${sc.runAsGroup}`}`;
  const drop = [...new Set((sc.capabilities?.drop ?? []).map(capabilityName))];
  const capabilities = added.length || drop.length
    ? { ...(added.length ? { add: ["SYS_PTRACE"] } : {}), ...(drop.length ? { drop } : {}) }
    : undefined;
  return {
    user,
    readonlyRootFilesystem: sc.readOnlyRootFilesystem,
    linuxParameters: capabilities && { capabilities },
  };
}
