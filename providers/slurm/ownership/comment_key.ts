/**
 * The secret that signs job comments (`./job_comment.ts`), kept in vkubelet's own state: 32
 * random bytes in `<stateDir>/job-comment.key`, created on first use (mode 0600, exclusively),
 * read ever after, so that a restarted vkubelet recognises its jobs. `stateDir` is on vkubelet's
 * host, never the shared directory: the compute nodes, where jobs run, do not see it. The file is
 * used only when it is a regular file of vkubelet's user that no one else may read, in a directory
 * of vkubelet's that no one else may write; anything else is refused, naming the fix.
 *
 * Without `stateDir` in the config, the first of `$STATE_DIRECTORY/slurm` (systemd's
 * `StateDirectory=`), `/var/lib/vkubelet/slurm` and `$XDG_STATE_HOME/vkubelet/slurm` (or
 * `~/.local/state/vkubelet/slurm`) that holds a key, else the first that can be created.
 * @module
 */
import { InvalidInputError } from "../../../provider/mod.ts";
import type { SlurmConfig } from "../config.ts";
import { hostUser } from "./identity.ts";
import { JobCommentKey } from "./job_comment.ts";

const KEY_FILE = "job-comment.key";
const KEY_BYTES = 32;

/** The candidate state directories, best first (see the module doc). */
export function defaultSlurmStateDirs(env: Record<string, string | undefined>): string[] {
  const dirs: string[] = [];
  const systemd = env.STATE_DIRECTORY?.split(":")[0];
  if (systemd) dirs.push(`${systemd}/slurm`);
  dirs.push("/var/lib/vkubelet/slurm");
  const state = env.XDG_STATE_HOME || (env.HOME ? `${env.HOME}/.local/state` : undefined);
  if (state) dirs.push(`${state}/vkubelet/slurm`);
  return dirs;
}

/** The node's comment key from the config's `stateDir` (or the default), created if need be. */
export async function loadCommentKey(
  config: Pick<SlurmConfig, "stateDir">,
): Promise<JobCommentKey> {
  const candidates = config.stateDir
    ? [config.stateDir]
    : defaultSlurmStateDirs(Deno.env.toObject());
  for (const dir of candidates) {
    if (await present(`${dir}/${KEY_FILE}`)) return await readKey(dir);
  }
  const problems: string[] = [];
  for (const dir of candidates) {
    try {
      await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
      await createKey(dir);
      return await readKey(dir);
    } catch (err) {
      problems.push(`${dir}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  throw new InvalidInputError(
    `the slurm provider has no directory for the key that signs its job comments (${
      problems.join("; ")
    }); set stateDir in the provider config to a directory of vkubelet's on this host`,
  );
}

async function present(path: string): Promise<boolean> {
  return await Deno.lstat(path).then(() => true, () => false);
}

/** Writes a new key, unless one is there already (another start won the race). */
async function createKey(dir: string): Promise<void> {
  await checkDir(dir);
  const secret = crypto.getRandomValues(new Uint8Array(KEY_BYTES));
  try {
    await Deno.writeFile(`${dir}/${KEY_FILE}`, secret, { mode: 0o600, createNew: true });
  } catch (err) {
    if (err instanceof Deno.errors.AlreadyExists) return;
    throw err;
  }
}

async function readKey(dir: string): Promise<JobCommentKey> {
  await checkDir(dir);
  const path = `${dir}/${KEY_FILE}`;
  const me = hostUser();
  const info = await Deno.lstat(path);
  const mode = (info.mode ?? 0) & 0o7777;
  if (!info.isFile || info.uid !== me.uid || (mode & 0o077) !== 0 || info.size !== KEY_BYTES) {
    throw new InvalidInputError(
      `${path} is not vkubelet's key (a ${KEY_BYTES}-byte regular file of uid ${me.uid}, mode 0600): it is owned by uid ${info.uid}, mode ${
        mode.toString(8).padStart(4, "0")
      }, ${info.size} bytes; remove it (vkubelet makes a new one, and then adopts none of the jobs signed with the old) or fix its owner and mode`,
    );
  }
  return await JobCommentKey.fromBytes(await Deno.readFile(path));
}

/** Refuses a state directory another user could write (and so replace the key in). */
async function checkDir(dir: string): Promise<void> {
  const me = hostUser();
  const info = await Deno.lstat(dir);
  const mode = (info.mode ?? 0) & 0o7777;
  if (!info.isDirectory || info.uid !== me.uid || (mode & 0o022) !== 0) {
    throw new InvalidInputError(
      `stateDir ${dir} is ${
        info.isDirectory ? "a directory" : "not a directory"
      } of uid ${info.uid} with mode ${
        mode.toString(8).padStart(4, "0")
      }: another user could replace the key that signs the jobs' comments; make it a directory of vkubelet's (uid ${me.uid}), mode 0700`,
    );
  }
}
