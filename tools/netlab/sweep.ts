/**
 * The last step of a lab's teardown, for pods vkubelet did not get to remove (a test that failed
 * half-way, vkubelet killed): kills the processes still in a pod network namespace of a node's
 * process provider and unmounts those namespace files, so that deleting the host leaves nothing.
 * @module
 */
import { tryRun } from "./command.ts";

/** Kills every process in a pod netns under `stateDir/netns` and unmounts the netns files. */
export async function killPodProcesses(stateDir: string): Promise<number> {
  const inodes = new Set<string>();
  const files: string[] = [];
  try {
    for await (const entry of Deno.readDir(`${stateDir}/netns`)) {
      const file = `${stateDir}/netns/${entry.name}`;
      files.push(file);
      const ino = (await Deno.stat(file).catch(() => undefined))?.ino;
      if (ino) inodes.add(`net:[${ino}]`);
    }
  } catch {
    return 0; // No pod networks were made.
  }
  let killed = 0;
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const link = await Deno.readLink(`/proc/${entry.name}/ns/net`).catch(() => "");
    if (!inodes.has(link)) continue;
    try {
      Deno.kill(Number(entry.name), "SIGKILL");
      killed++;
    } catch {
      // Gone meanwhile.
    }
  }
  for (const file of files) await tryRun(["umount", file]);
  return killed;
}
