/**
 * Files in the directories a job writes (`logs/`, `state/`, `stdin/` of its pod directory),
 * opened by vkubelet — root when the pods' directories belong to other users — without being led
 * by the job: a job may put a symbolic link, a FIFO, a device or a hard link where vkubelet
 * expects its own file. So every file is checked before and after it is opened: `lstat` (the
 * name itself, not what it points to) must show a regular file owned by the job's user; it is
 * opened with `O_NOFOLLOW` (a link swapped in meanwhile fails) and `O_NONBLOCK` (a FIFO swapped
 * in opens at once instead of waiting for a writer); `fstat` of the open file must show the same
 * device and inode. Reads are bounded. A file vkubelet creates there is created exclusively
 * (`O_EXCL`) and given to the job's user through its handle (`fchown`), never by path.
 *
 * The names above the file cannot be swapped: the pod directory is vkubelet's, 0711, so a job
 * can change what is inside its subdirectories but not the subdirectories themselves
 * (`../request/pod_dir.ts`). Deno's own `Deno.open` takes no flags; `node:fs` passes them through.
 * @module
 */
import { constants, promises as fsp } from "node:fs";
import { InvalidInputError } from "../../../provider/mod.ts";

/** A user and group, as numbers. */
export interface Owner {
  uid: number;
  gid: number;
}

type Handle = Awaited<ReturnType<typeof fsp.open>>;

const NO_FOLLOW = constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

/** Raised for a file that is not the job's own regular file; vkubelet does not touch it. */
class UnsafeFileError extends InvalidInputError {
  override name = "UnsafeFileError";
}

function refuse(path: string, what: string, owner: Owner): never {
  throw new UnsafeFileError(
    `${path} is ${what}, not a regular file of the job's user (uid ${owner.uid}); vkubelet does not follow or read it (the job may have replaced the file it wrote there)`,
  );
}

function kindOf(info: Deno.FileInfo): string {
  if (info.isSymlink) return "a symbolic link";
  if (info.isDirectory) return "a directory";
  if (info.isFifo) return "a FIFO";
  if (info.isCharDevice || info.isBlockDevice) return "a device";
  if (info.isSocket) return "a socket";
  return "not a regular file";
}

/** Opens the job's regular file `path` with `flags`; undefined when it does not exist. */
async function openChecked(path: string, owner: Owner, flags: number): Promise<Handle | undefined> {
  let before: Deno.FileInfo;
  try {
    before = await Deno.lstat(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
  if (!before.isFile) refuse(path, kindOf(before), owner);
  if (before.uid !== owner.uid) refuse(path, `a file of uid ${before.uid}`, owner);
  let handle: Handle;
  try {
    handle = await fsp.open(path, flags | NO_FOLLOW);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === "ENOENT") return undefined;
    if (code === "ELOOP") refuse(path, "a symbolic link", owner);
    throw err;
  }
  const after = await handle.stat();
  if (!after.isFile() || after.dev !== before.dev || after.ino !== before.ino) {
    await handle.close();
    refuse(path, "a file that was replaced while vkubelet opened it", owner);
  }
  return handle;
}

/** Reads at most `maxBytes` of the job's file from `offset`; `size` is the file's, then. */
export async function readJobFile(
  path: string,
  owner: Owner,
  range: { offset?: number; maxBytes: number },
): Promise<{ bytes: Uint8Array; size: number } | undefined> {
  const handle = await openChecked(path, owner, constants.O_RDONLY);
  if (!handle) return undefined;
  try {
    const { size } = await handle.stat();
    const offset = range.offset ?? 0;
    const out = new Uint8Array(Math.max(0, Math.min(size - offset, range.maxBytes)));
    let read = 0;
    while (read < out.length) {
      const { bytesRead } = await handle.read(out, read, out.length - read, offset + read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    return { bytes: out.subarray(0, read), size };
  } finally {
    await handle.close();
  }
}

/** The job's small text file (a state file), or undefined when it does not exist. */
export async function readJobText(path: string, owner: Owner): Promise<string | undefined> {
  const file = await readJobFile(path, owner, { maxBytes: 256 });
  return file && new TextDecoder().decode(file.bytes);
}

/** The size of the job's file, 0 when it does not exist yet. */
export async function jobFileSize(path: string, owner: Owner): Promise<number> {
  return (await readJobFile(path, owner, { maxBytes: 0 }))?.size ?? 0;
}

/** True when anything at all is at `path` (a link is not followed). */
export async function present(path: string): Promise<boolean> {
  return await Deno.lstat(path).then(() => true, () => false);
}

/**
 * Opens the job's file `path` for appending; a file vkubelet has to create is created 0600 and
 * given to `owner` through its handle. `asUser` is vkubelet's own uid: no chown when they match.
 */
export async function appendJobFile(path: string, owner: Owner, asUser: number): Promise<Handle> {
  const flags = constants.O_WRONLY | constants.O_APPEND;
  const created = await createExclusive(path, flags, owner, asUser);
  if (created) return created;
  const handle = await openChecked(path, owner, flags);
  if (!handle) throw new Deno.errors.NotFound(`${path} disappeared while it was opened`);
  return handle;
}

/** Creates the empty marker file `path` for the job; nothing when something is there already. */
export async function createJobMarker(path: string, owner: Owner, asUser: number): Promise<void> {
  await (await createExclusive(path, constants.O_WRONLY, owner, asUser))?.close();
}

async function createExclusive(
  path: string,
  flags: number,
  owner: Owner,
  asUser: number,
): Promise<Handle | undefined> {
  let handle: Handle;
  try {
    handle = await fsp.open(path, flags | constants.O_CREAT | constants.O_EXCL | NO_FOLLOW, 0o600);
  } catch (err) {
    if ((err as { code?: string }).code === "EEXIST") return undefined;
    throw err;
  }
  try {
    if (owner.uid !== asUser) await handle.chown(owner.uid, owner.gid);
  } catch (err) {
    await handle.close();
    throw err;
  }
  return handle;
}
