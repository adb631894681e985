/**
 * Who a pod's job is on the cluster, and so who owns its files in the pod directory:
 * `fileOwner` when set (vkubelet runs as root and jobs as that user), else vkubelet's own user
 * (the commands run as it, or slurmrestd runs as it).
 * @module
 */
import type { SlurmConfig } from "./config.ts";
import type { Owner } from "./job_files.ts";

let host: Owner | undefined;

/**
 * vkubelet's own uid and gid: the owner of `/proc/self` (`Deno.uid()` would want `--allow-sys`,
 * which vkubelet is not given).
 */
export function hostUser(): Owner {
  if (!host) {
    const info = Deno.statSync("/proc/self");
    host = { uid: info.uid ?? 0, gid: info.gid ?? 0 };
  }
  return host;
}

/** The user the jobs of `namespace`'s pods run as, who owns their files. */
export function jobUserOf(config: SlurmConfig, _namespace: string | undefined): Owner {
  return config.fileOwner ?? hostUser();
}
