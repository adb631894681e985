/**
 * `--pod-log-dir`, `--container-log-max-size`, `--container-log-max-files`: the directory the
 * pods' container logs go to (the kubelet's `/var/log/pods` when vkubelet may write there, else
 * `pods/` in its state directory; `none` for none) and the kit's {@link PodLogDir} on it.
 * @module
 */
import type { Clock } from "../../base/clock.ts";
import { dirname } from "node:path";
import { quantityToNumber } from "../../k8s/quantity.ts";
import { type Logger, PodLogDir } from "../../provider/mod.ts";
import type { Config } from "./schema.ts";

/** The kubelet's pod log directory, and where node log agents look by default. */
export const KUBELET_POD_LOG_DIR = "/var/log/pods";

/**
 * The pod log directory `config` asks for, or the default: /var/log/pods if it can be made and
 * written, else `pods/` under the first state directory that can; undefined for `none` or when
 * none can be written (logged).
 */
export async function resolvePodLogDir(
  config: Pick<Config, "podLogDir">,
  env: Record<string, string | undefined>,
  log: Logger,
): Promise<string | undefined> {
  const asked = config.podLogDir;
  if (asked?.toLowerCase() === "none") return undefined;
  if (asked) return asked;
  const state = env.XDG_STATE_HOME || (env.HOME ? `${env.HOME}/.local/state` : undefined);
  const candidates = [
    KUBELET_POD_LOG_DIR,
    ...(env.STATE_DIRECTORY ? [`${env.STATE_DIRECTORY.split(":")[0]}/pods`] : []),
    "/var/lib/vkubelet/pods",
    ...(state ? [`${state}/vkubelet/pods`] : []),
  ];
  for (const dir of candidates) {
    if (await writable(dir)) {
      log.info("pods' container logs go to {dir} (--pod-log-dir)", { dir });
      return dir;
    }
  }
  log.warn("no pod log directory can be written ({dirs}); give --pod-log-dir", {
    dirs: candidates.join(", "),
  });
  return undefined;
}

/** The kit's log directory for one node, with the rotation flags. */
export function podLogDirOf(
  dir: string,
  config: Pick<Config, "containerLogMaxSize" | "containerLogMaxFiles" | "podLogMaxStreams">,
  deps: { nodeName: string; clock: Clock },
): PodLogDir {
  const size = config.containerLogMaxSize === "-1"
    ? -1
    : Math.round(quantityToNumber(config.containerLogMaxSize) ?? 10 << 20);
  return new PodLogDir({
    dir,
    // The links go beside a kubelet's only when the logs do.
    linkDir: dir === KUBELET_POD_LOG_DIR ? "/var/log/containers" : `${dirname(dir)}/containers`,
    maxBytes: size,
    maxFiles: config.containerLogMaxFiles,
    clock: deps.clock,
    nodeName: deps.nodeName,
    maxStreams: config.podLogMaxStreams,
  });
}

async function writable(dir: string): Promise<boolean> {
  try {
    await Deno.mkdir(dir, { recursive: true, mode: 0o755 });
    const probe = `${dir}/.vkubelet-probe-${Deno.pid}`;
    await Deno.writeTextFile(probe, "");
    await Deno.remove(probe);
    return true;
  } catch {
    return false;
  }
}
