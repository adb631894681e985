/**
 * Each pod's network namespace, kept by a bind mount of its nsfs file on a file of the state
 * directory (`<stateDir>/netns/<pod uid>`), as `ip netns add` keeps one under `/run/netns`:
 * util-linux `unshare --net=<file> true` makes it, `umount` ends it once no process is left in
 * it. The bind lives in vkubelet's mount namespace; under systemd that is the unit's own and
 * goes when the unit stops while the pod's processes keep the namespace, so an adopted pod's
 * namespace is bound again from one of its processes (`/proc/<pid>/ns/net`).
 * @module
 */
import { join } from "node:path";
import { hostCommand } from "../host/host_tools.ts";

/** The netns file of pod `uid` under `stateDir`. */
export function netnsPath(stateDir: string, uid: string): string {
  return join(stateDir, "netns", uid);
}

/** Whether `path` is a bind of a network namespace (an nsfs mount point). */
export function isNetns(path: string): boolean {
  let text = "";
  try {
    text = Deno.readTextFileSync("/proc/self/mountinfo");
  } catch {
    // Deno lets only --allow-all read /proc/self/mountinfo: a bind is a mount point, on
    // another device than its directory (nsfs's), which vkubelet makes nowhere else there.
    try {
      return Deno.statSync(path).dev !== Deno.statSync(join(path, "..")).dev;
    } catch {
      return false;
    }
  }
  for (const line of text.split("\n")) {
    const fields = line.split(" ");
    const dash = fields.indexOf("-");
    if (fields[4] === path && dash > 0 && fields[dash + 1] === "nsfs") return true;
  }
  return false;
}

/** Makes a new network namespace bound at `path` (loopback down, no other interface). */
export async function createNetns(path: string): Promise<void> {
  if (isNetns(path)) return;
  await Deno.mkdir(join(path, ".."), { recursive: true, mode: 0o700 });
  await Deno.writeFile(path, new Uint8Array(), { mode: 0o600 });
  await run("unshare", [`--net=${path}`, "--", "true"], `make network namespace ${path}`);
}

/** Binds the network namespace of process `pid` at `path` again (after a restart). */
export async function rebindNetns(path: string, pid: number): Promise<void> {
  await Deno.mkdir(join(path, ".."), { recursive: true, mode: 0o700 });
  await Deno.writeFile(path, new Uint8Array(), { mode: 0o600 });
  await run("mount", ["--bind", `/proc/${pid}/ns/net`, path], `bind network namespace ${path}`);
}

/** Unbinds and removes `path`; the namespace ends with its last process. */
export async function removeNetns(path: string): Promise<void> {
  while (isNetns(path)) {
    await run("umount", [path], `unbind network namespace ${path}`);
  }
  await Deno.remove(path).catch(() => {});
}

/** The netns files under `stateDir` (pod uids). */
export async function listNetns(stateDir: string): Promise<string[]> {
  const found: string[] = [];
  try {
    for await (const entry of Deno.readDir(join(stateDir, "netns"))) found.push(entry.name);
  } catch {
    // none yet
  }
  return found;
}

async function run(tool: "unshare" | "mount" | "umount", args: string[], what: string) {
  const out = await hostCommand(tool, { args, stdout: "null", stderr: "piped" }).output();
  if (!out.success) {
    const detail = new TextDecoder().decode(out.stderr).trim() || `exit ${out.code}`;
    throw new Error(`could not ${what}: ${detail}`);
  }
}
