/**
 * Who a pod's job is on the cluster, and so who owns its files in the pod directory and which
 * jobs are vkubelet's to adopt: the namespace's user in `runAsUsers` (vkubelet, root, submits
 * with `sbatch --uid`); else `fileOwner` when set (vkubelet runs as root and every job as that
 * user); else vkubelet's own user (the commands run as it, or slurmrestd runs as it). Without
 * `runAsUsers` every pod of the node shares one identity on the cluster.
 *
 * A job whose user is root (uid 0) is refused unless its namespace is in `allowRootNamespaces`,
 * and always when a container has `runAsNonRoot` ({@link checkJobUser}).
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { effectiveSecurityContext, InvalidInputError } from "../../../provider/mod.ts";
import type { SlurmConfig } from "../config.ts";
import type { Owner } from "./job_files.ts";

let host: Owner | undefined;

/**
 * vkubelet's own uid and gid. `Deno.uid()` wants `--allow-sys=uid` and `/proc/self` wants
 * `--allow-all`, neither of which vkubelet is given: so the owner of a file it creates (the
 * owner of `/proc/self` when it may read that, as in tests).
 */
export function hostUser(): Owner {
  if (!host) {
    let info: Deno.FileInfo;
    try {
      info = Deno.statSync("/proc/self");
    } catch (err) {
      if (!(err instanceof Deno.errors.NotCapable)) throw err;
      const probe = Deno.makeTempFileSync({ prefix: "vkubelet-uid-" });
      try {
        info = Deno.statSync(probe);
      } finally {
        Deno.removeSync(probe);
      }
    }
    host = { uid: info.uid ?? 0, gid: info.gid ?? 0 };
  }
  return host;
}

/** The user the jobs of `namespace`'s pods run as, who owns their files. */
export function jobUserOf(config: SlurmConfig, namespace: string | undefined): Owner {
  const mapped = namespace === undefined ? undefined : config.runAsUsers[namespace];
  if (mapped) return { uid: mapped.uid, gid: mapped.gid };
  return config.fileOwner ?? hostUser();
}

/** Refuses `runAsUsers` when vkubelet is not root: only root may submit for another user. */
export function checkCanMapUsers(config: SlurmConfig): string | undefined {
  if (Object.keys(config.runAsUsers).length === 0 || hostUser().uid === 0) return undefined;
  return `runAsUsers: vkubelet runs as uid ${hostUser().uid}, but only root may submit jobs for other users (sbatch --uid) and give them their pods' directories; run vkubelet as root or remove runAsUsers (every pod then shares one identity)`;
}

/**
 * Refuses a pod whose job would run as root: with the kubelet's own message when a container has
 * `runAsNonRoot` (kubernetes/kubernetes pkg/kubelet/kuberuntime/security_context_others.go
 * `verifyRunAsNonRoot`; the job's user is the "image's" user here), else unless the admin lists
 * the namespace in `allowRootNamespaces`.
 */
export function checkJobUser(pod: Pod, config: SlurmConfig): void {
  const ns = pod.metadata?.namespace ?? "";
  if (jobUserOf(config, ns).uid !== 0) return;
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    const sc = effectiveSecurityContext(pod.spec?.securityContext, c);
    if (!sc.runAsNonRoot) continue;
    const { name, uid } = pod.metadata ?? {};
    const who = JSON.stringify(`${name}_${ns}(${uid})`);
    throw new InvalidInputError(
      sc.runAsUser === undefined
        ? `container has runAsNonRoot and image will run as root (pod: ${who}, container: ${c.name})`
        : `container's runAsUser breaks non-root policy (pod: ${who}, container: ${c.name})`,
    );
  }
  if (config.allowRootNamespaces.includes(ns)) return;
  const why = config.fileOwner
    ? "the provider config's fileOwner is uid 0"
    : `namespace ${ns} has no runAsUsers entry and fileOwner is not set, so the job would run as vkubelet's user, root`;
  throw new InvalidInputError(
    `the pod's SLURM job would run as root (uid 0): ${why}; set fileOwner in the provider config to the unprivileged user jobs run as (with rest, the user slurmrestd submits as), map ${ns} under runAsUsers, or list ${ns} in allowRootNamespaces to let its pods run as root`,
  );
}
