/**
 * File operations on `/sys` (the cgroup tree). Deno allows `/sys` and `/proc` only with
 * `--allow-all`, which vkubelet does not run with (scripts/permissions.ts), so when Deno refuses
 * (`NotCapable`) the operation goes through a small command instead (`cat`, `sh`, `mkdir`,
 * `rmdir`, `test`; --allow-run, which the provider needs anyway), as ./proc.ts does for `/proc`.
 * @module
 */
import { hostCommand, type HostTool } from "./host_tools.ts";

const decoder = new TextDecoder();
/** Set once Deno refuses a direct operation on /sys. */
let viaSubprocess = false;

function refused(err: unknown): boolean {
  if (!(err instanceof Deno.errors.NotCapable)) return false;
  viaSubprocess = true;
  return true;
}

function run(
  cmd: HostTool,
  args: string[],
): { ok: boolean; stdout: string; stderr: string } {
  const out = hostCommand(cmd, { args, stdout: "piped", stderr: "piped", stdin: "null" })
    .outputSync();
  return {
    ok: out.success,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
  };
}

/** Reads a file; throws `NotFound` when it cannot be read. */
export function readSysText(path: string): string {
  if (!viaSubprocess) {
    try {
      return Deno.readTextFileSync(path);
    } catch (err) {
      if (!refused(err)) throw err;
    }
  }
  const out = run("cat", [path]);
  if (!out.ok) throw new Deno.errors.NotFound(`cannot read ${path}: ${out.stderr.trim()}`);
  return out.stdout;
}

/** Writes `text` to an existing control file (a cgroup's `memory.max`, ...). */
export async function writeSysText(path: string, text: string): Promise<void> {
  if (!viaSubprocess) {
    try {
      return await Deno.writeTextFile(path, text);
    } catch (err) {
      if (!refused(err)) throw err;
    }
  }
  const out = run("sh", ["-c", 'printf %s "$1" > "$2"', "vkubelet-write", text, path]);
  if (!out.ok) throw new Error(`cannot write ${path}: ${out.stderr.trim()}`);
}

/** `mkdir -p`. */
export async function makeSysDir(path: string): Promise<void> {
  if (!viaSubprocess) {
    try {
      return await Deno.mkdir(path, { recursive: true });
    } catch (err) {
      if (!refused(err)) throw err;
    }
  }
  const out = run("mkdir", ["-p", "--", path]);
  if (!out.ok) throw new Error(`cannot create ${path}: ${out.stderr.trim()}`);
}

/** Removes an empty directory (a cgroup); false when it could not. */
export async function removeSysDir(path: string): Promise<boolean> {
  if (!viaSubprocess) {
    try {
      await Deno.remove(path);
      return true;
    } catch (err) {
      if (!refused(err)) return false;
    }
  }
  return run("rmdir", ["--", path]).ok;
}

/** True if `path` exists. */
export async function sysExists(path: string): Promise<boolean> {
  if (!viaSubprocess) {
    try {
      await Deno.stat(path);
      return true;
    } catch (err) {
      if (!refused(err)) return false;
    }
  }
  return run("test", ["-e", path]).ok;
}
