/**
 * Deleting a pod kills every process it started, also those that left its process group and
 * session (`setsid`) or its process tree (a double fork), also after a vkubelet restart that
 * left the pods running (the systemd unit's `KillMode=process`).
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { cleanup, makePod, startProvider, waitFor } from "./_helpers.ts";

/** A `sleep` argument no other process has, to find the process by its command line. */
function marker(): string {
  return `${4000 + Math.floor(Math.random() * 1000)}.${Date.now() % 100000}`;
}

/** PIDs of live `sleep <arg>` processes (zombies are dead already). */
function sleepers(arg: string): number[] {
  const out: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const argv = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).split("\0");
      const state = Deno.readTextFileSync(`/proc/${entry.name}/stat`).split(") ")[1]?.[0];
      if (argv[0].endsWith("sleep") && argv[1] === arg && state !== "Z") {
        out.push(Number(entry.name));
      }
    } catch {
      // gone
    }
  }
  return out;
}

async function deleteNow(
  t: Awaited<ReturnType<typeof startProvider>>,
  pod: ReturnType<typeof makePod>,
) {
  await t.provider.deletePod({
    ...pod,
    metadata: { ...pod.metadata, deletionGracePeriodSeconds: 1 },
  }, {});
}

Deno.test("deleting a pod kills a process its container started with setsid", async () => {
  const t = await startProvider();
  const arg = marker();
  const pod = makePod([{
    name: "c",
    image: "x",
    command: ["sh", "-c", `setsid sleep ${arg} & sleep 60`],
  }]);
  try {
    await t.provider.createPod(pod, {});
    const [pid] = await waitFor(
      "the setsid sleep",
      () => sleepers(arg).length > 0 && sleepers(arg),
    );
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`).split(") ")[1].split(" ");
    assert.equal(Number(stat[3]), pid, "it leads its own session");
    await deleteNow(t, pod);
    await waitFor("the setsid sleep to be gone", () => sleepers(arg).length === 0, 5000);
  } finally {
    for (const pid of sleepers(arg)) Deno.kill(pid, "SIGKILL");
    await cleanup(t.provider, pod);
    await t.close();
  }
});

Deno.test("after a vkubelet restart (KillMode=process), delete still kills the setsid process", async () => {
  const first = await startProvider();
  const arg = marker();
  const pod = makePod([{
    name: "c",
    image: "x",
    command: ["sh", "-c", `setsid sleep ${arg} & sleep 60`],
  }]);
  let second: Awaited<ReturnType<typeof startProvider>> | undefined;
  try {
    await first.provider.createPod(pod, {});
    await waitFor("the setsid sleep", () => sleepers(arg).length > 0);
    // systemd's KillMode=process stops only vkubelet: the pod's processes keep running.
    await first.close({ keepState: true });
    assert.equal(sleepers(arg).length, 1);
    second = await startProvider({ stateDir: first.stateDir });
    assert.ok(second.provider.runnerOf("default", pod.metadata!.name!)?.live("c"), "re-adopted");
    await deleteNow(second, pod);
    await waitFor("the setsid sleep to be gone", () => sleepers(arg).length === 0, 5000);
  } finally {
    for (const pid of sleepers(arg)) Deno.kill(pid, "SIGKILL");
    if (second) {
      await cleanup(second.provider, pod);
      await second.close();
    } else await first.close();
  }
});

/** Why this host cannot give the provider cgroups, if it cannot. */
async function noCgroups(): Promise<string | undefined> {
  if (Deno.uid() !== 0) return "creating cgroups needs root";
  const exists = (path: string) => Deno.stat(path).then(() => true, () => false);
  if (await exists("/sys/fs/cgroup/cgroup.controllers")) return undefined;
  return await exists("/sys/fs/cgroup/memory/cgroup.procs") ? undefined : "no cgroup v1 or v2";
}
const skip = await noCgroups();

Deno.test({
  name: "with cgroups, deleting a pod kills a double-forked setsid process, also after a restart",
  ignore: skip !== undefined,
  fn: async () => {
    const name = `vkubelet-reaper-test-${Date.now() % 100000}`;
    const config = { cgroups: "required", cgroupRoot: join("/sys/fs/cgroup", name) };
    const first = await startProvider({ config });
    const arg = marker();
    // The subshell exits at once: the sleep's parent is gone and it is in no session of ours.
    const pod = makePod([{
      name: "c",
      image: "x",
      command: ["sh", "-c", `(setsid sleep ${arg} &); sleep 60`],
    }]);
    let second: Awaited<ReturnType<typeof startProvider>> | undefined;
    try {
      await first.provider.createPod(pod, {});
      const [pid] = await waitFor("the sleep", () => sleepers(arg).length > 0 && sleepers(arg));
      const ppid = Number(Deno.readTextFileSync(`/proc/${pid}/stat`).split(") ")[1].split(" ")[1]);
      const runner = first.provider.runnerOf("default", pod.metadata!.name!)!.live("c")!;
      assert.notEqual(ppid, runner.instance.record.pid, "reparented away from the container");
      await first.close({ keepState: true });
      second = await startProvider({ stateDir: first.stateDir, config });
      await deleteNow(second, pod);
      await waitFor("the double-forked sleep to be gone", () => sleepers(arg).length === 0, 5000);
    } finally {
      for (const pid of sleepers(arg)) Deno.kill(pid, "SIGKILL");
      if (second) {
        await cleanup(second.provider, pod);
        await second.close();
      } else await first.close();
      for (
        const dir of [
          join("/sys/fs/cgroup", name),
          ...["memory", "cpu", "cpuacct"].map((c) => join("/sys/fs/cgroup", c, name)),
        ]
      ) {
        await Deno.remove(dir).catch(() => {});
      }
    }
  },
});
