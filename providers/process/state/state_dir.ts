/**
 * Where the process provider keeps its pods when the config names no `stateDir`: like the
 * serving certificate's `--cert-dir` default (x509/certificate_store.ts), systemd's
 * `$STATE_DIRECTORY`, then `/var/lib/vkubelet/process`, then the user's state directory, so that
 * a non-root user gets a working default instead of "Permission denied".
 * @module
 */

/** The candidate directories, best first. */
export function defaultStateDirs(env: Record<string, string | undefined>): string[] {
  const dirs: string[] = [];
  const systemd = env.STATE_DIRECTORY?.split(":")[0];
  if (systemd) dirs.push(`${systemd}/process`);
  dirs.push("/var/lib/vkubelet/process");
  const state = env.XDG_STATE_HOME || (env.HOME ? `${env.HOME}/.local/state` : undefined);
  if (state) dirs.push(`${state}/vkubelet/process`);
  return dirs;
}

/** Thrown when no candidate can be used; the message lists each with its reason. */
export class StateDirError extends Error {
  override name = "StateDirError";
}

/**
 * The first candidate that already holds pods (so a restart re-adopts them), else the first
 * whose `pods` directory can be created; creates it.
 */
export async function chooseStateDir(candidates: string[]): Promise<string> {
  for (const dir of candidates) {
    const found = await Deno.stat(`${dir}/pods`).then((i) => i.isDirectory, () => false);
    if (found) return dir;
  }
  const problems: string[] = [];
  for (const dir of candidates) {
    try {
      await Deno.mkdir(`${dir}/pods`, { recursive: true, mode: 0o700 });
      return dir;
    } catch (err) {
      problems.push(`${dir}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  throw new StateDirError(
    `no usable state directory (${problems.join("; ")}); set stateDir in the provider config`,
  );
}
