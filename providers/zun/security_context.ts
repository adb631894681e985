/**
 * What a container's security context may ask of Zun. Zun 18.0.0's capsule container has no
 * security field at all (openstack/zun zun/api/controllers/v1/schemas/parameter_types.py
 * `capsule_containers_list`: image, command, args, resources, ports, volumeMounts, env, workDir,
 * imagePullPolicy, stdin, tty; `privileged` and `security_groups` exist for plain containers
 * only, schemas/containers.py), and zun-compute starts each one unprivileged
 * (zun/container/docker/driver.py: `host_config['privileged'] = container.privileged`, false for
 * a capsule's) with the engine's defaults: the image's user, a writable root, the default
 * capabilities, seccomp and AppArmor profiles, no `no_new_privs`. A value that matches those
 * defaults is accepted; any other is refused with {@link InvalidInputError} naming the field,
 * so the pod fails rather than running with more power (or less) than it asked. The pod's
 * context is merged under the container's first (the kit's `effectiveSecurityContext`).
 * @module
 */
import type { Container, PodSecurityContext } from "kubernetes-types/core/v1.d.ts";
import { effectiveSecurityContext, InvalidInputError } from "../../provider/mod.ts";

const NO_FIELD = "Zun's capsule API (18.0.0) has no security field, so Zun cannot enforce it";

/**
 * Throws {@link InvalidInputError} for the first field of container `c`'s effective security
 * context (`field` is its path in the pod, e.g. `spec.containers[0]`) that Zun cannot honour.
 */
export function checkSecurityContext(
  pod: PodSecurityContext | undefined,
  c: Container,
  field: string,
): void {
  const sc = effectiveSecurityContext(pod, c);
  const refuse = (path: string, then: string): never => {
    throw new InvalidInputError(
      `${field}.securityContext.${path}: ${NO_FIELD}; ${then}, or run the pod on a node that can`,
    );
  };
  if (sc.privileged) refuse("privileged", "Zun runs a capsule's containers unprivileged");
  // The kubelet checks runAsNonRoot against the uid the container will run as
  // (kubernetes/kubernetes pkg/kubelet/kuberuntime/security_context_others.go
  // `verifyRunAsNonRoot`); Zun runs the image's user, which vkubelet cannot see.
  if (sc.runAsNonRoot) refuse("runAsNonRoot", "Zun runs the image's user, unchecked; remove it");
  if (sc.runAsUser !== undefined) {
    refuse("runAsUser", "Zun runs the image's user; build the image with USER instead");
  }
  if (sc.runAsGroup !== undefined) {
    refuse("runAsGroup", "Zun runs the image's group; build the image with USER instead");
  }
  if (sc.readOnlyRootFilesystem) {
    refuse("readOnlyRootFilesystem", "remove it to run with a writable root filesystem");
  }
  if (sc.allowPrivilegeEscalation === false) {
    refuse("allowPrivilegeEscalation", "remove it (setuid programs in the image would work)");
  }
  if (sc.capabilities?.add?.length) refuse("capabilities.add", "remove it");
  if (sc.capabilities?.drop?.length) {
    refuse("capabilities.drop", "remove it to run with the engine's default capabilities");
  }
  const profile = (path: string, type?: string) => {
    if (type && type !== "RuntimeDefault") {
      refuse(path, `only RuntimeDefault (the engine's own profile) is what Zun runs; not ${type}`);
    }
  };
  profile("seccompProfile", sc.seccompProfile?.type);
  profile("appArmorProfile", sc.appArmorProfile?.type);
  if (sc.seLinuxOptions) refuse("seLinuxOptions", "remove them");
  if (sc.procMount && sc.procMount !== "Default") refuse("procMount", "remove it");
}

/** Throws {@link InvalidInputError} for a pod-level field Zun cannot honour (sysctls). */
export function checkPodSecurityContext(pod: PodSecurityContext | undefined): void {
  if (pod?.sysctls?.length) {
    throw new InvalidInputError(
      `spec.securityContext.sysctls: ${NO_FIELD}; remove them, or run the pod on a node that can`,
    );
  }
}
