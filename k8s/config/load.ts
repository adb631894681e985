/**
 * Finding the configuration the way kubectl does: `--kubeconfig` (that file only, which must
 * exist), else every file in `$KUBECONFIG` (colon-separated, missing ones skipped, merged), else
 * `~/.kube/config`, else the in-cluster service account.
 * @module
 */
import { delimiter, join } from "node:path";
import type { Clock } from "../../base/clock.ts";
import { KubeConfigError } from "../errors.ts";
import { type InClusterOptions, loadInClusterConfig, looksInCluster } from "./in_cluster.ts";
import { type Kubeconfig, mergeKubeconfigs, parseKubeconfig } from "./kubeconfig_file.ts";
import { resolveContext } from "./resolve.ts";
import type { ConnectionConfig } from "./types.ts";

/** Options for {@link loadKubeConfig}. */
export interface LoadKubeConfigOptions {
  /** An explicit kubeconfig path (`--kubeconfig`); when set, nothing else is consulted. */
  kubeconfig?: string;
  /** A context name instead of the file's `current-context`. */
  context?: string;
  /** Environment to read (`KUBECONFIG`, `HOME`, in-cluster variables); defaults to the process's. */
  env?: Record<string, string | undefined>;
  /** Overrides the service-account folder for in-cluster configuration (tests). */
  serviceAccountDir?: InClusterOptions["serviceAccountDir"];
  clock?: Clock;
}

/** The kubeconfig files to read, in precedence order, and whether the caller named one. */
export function kubeconfigPaths(
  options: Pick<LoadKubeConfigOptions, "kubeconfig" | "env">,
): { paths: string[]; explicit: boolean } {
  if (options.kubeconfig) return { paths: [options.kubeconfig], explicit: true };
  const env = options.env ?? Deno.env.toObject();
  if (env.KUBECONFIG) {
    const paths = [...new Set(env.KUBECONFIG.split(delimiter).filter((p) => p !== ""))];
    return { paths, explicit: false };
  }
  const home = env.HOME ?? env.USERPROFILE;
  return { paths: home ? [join(home, ".kube", "config")] : [], explicit: false };
}

/**
 * Reads and merges kubeconfig files. Missing files are skipped unless `explicit`; a file that
 * exists but cannot be read or parsed is an error naming it. Undefined when none exists.
 */
export async function readKubeconfigs(
  paths: string[],
  explicit: boolean,
): Promise<Kubeconfig | undefined> {
  const configs: Kubeconfig[] = [];
  for (const path of paths) {
    let text: string;
    try {
      text = await Deno.readTextFile(path);
    } catch (err) {
      if (err instanceof Deno.errors.NotFound && !explicit) continue;
      const fix = err instanceof Deno.errors.NotFound
        ? "check the --kubeconfig path"
        : "check the file's permissions";
      throw new KubeConfigError(`cannot read the file: ${(err as Error).message}; ${fix}`, {
        path,
        cause: err,
      });
    }
    configs.push(parseKubeconfig(text, path));
  }
  return configs.length > 0 ? mergeKubeconfigs(configs) : undefined;
}

/** Resolves the configuration to use, from kubeconfig files or the pod's service account. */
export async function loadKubeConfig(
  options: LoadKubeConfigOptions = {},
): Promise<ConnectionConfig> {
  const env = options.env ?? Deno.env.toObject();
  const { paths, explicit } = kubeconfigPaths({ kubeconfig: options.kubeconfig, env });
  const kubeconfig = await readKubeconfigs(paths, explicit);
  if (kubeconfig) {
    return await resolveContext(kubeconfig, { context: options.context, clock: options.clock });
  }
  if (looksInCluster(env)) {
    if (options.context) {
      throw new KubeConfigError(
        `context "${options.context}" was asked for but no kubeconfig file exists ` +
          `(looked at ${paths.join(", ") || "nothing: HOME is not set"}); drop the context ` +
          "option to use the in-cluster service account",
      );
    }
    return await loadInClusterConfig({
      env,
      serviceAccountDir: options.serviceAccountDir,
      clock: options.clock,
    });
  }
  throw new KubeConfigError(
    `no Kubernetes configuration found (looked at ${paths.join(", ") || "no file: HOME is unset"}` +
      ", and KUBERNETES_SERVICE_HOST is not set); pass --kubeconfig, set KUBECONFIG, or run " +
      "inside a pod with a service account",
  );
}
