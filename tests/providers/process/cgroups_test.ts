import assert from "node:assert/strict";
import { join } from "node:path";
import type { Container } from "kubernetes-types/core/v1.d.ts";
import {
  cgroupProcsFiles,
  cgroupUsage,
  createCgroup,
  probeCgroups,
  removeCgroup,
  wasOomKilled,
} from "../../../providers/process/host/cgroups.ts";

const limited: Container = {
  name: "main",
  resources: { limits: { memory: "50Mi", cpu: "250m" } },
};

/** A fake cgroup v1 mount: memory, cpu and cpuacct hierarchies with their marker files. */
async function fakeV1(controllers = ["memory", "cpu", "cpuacct"]) {
  const mount = await Deno.makeTempDir({ prefix: "vk-cgroupfs-" });
  const markers: Record<string, string> = {
    memory: "memory.limit_in_bytes",
    cpu: "cpu.cfs_quota_us",
    cpuacct: "cpuacct.usage",
  };
  for (const c of controllers) {
    await Deno.mkdir(join(mount, c));
    await Deno.writeTextFile(join(mount, c, markers[c]), "-1\n");
  }
  return mount;
}

Deno.test("cgroup v1: the memory, cpu and cpuacct hierarchies are found and prepared", async () => {
  const mount = await fakeV1();
  try {
    const support = await probeCgroups(join(mount, "vkubelet"));
    assert.deepEqual(support, {
      ok: true,
      version: 1,
      roots: {
        memory: join(mount, "memory", "vkubelet"),
        cpu: join(mount, "cpu", "vkubelet"),
        cpuacct: join(mount, "cpuacct", "vkubelet"),
      },
    });
    for (const c of ["memory", "cpu", "cpuacct"]) {
      assert.ok((await Deno.stat(join(mount, c, "vkubelet"))).isDirectory);
    }
  } finally {
    await Deno.remove(mount, { recursive: true });
  }
});

Deno.test("cgroup v1: a missing hierarchy says which, and limits are not enforced", async () => {
  const mount = await fakeV1(["memory", "cpuacct"]);
  try {
    const support = await probeCgroups(join(mount, "vkubelet"));
    assert.equal(support.ok, false);
    assert.match(!support.ok ? support.reason : "", /cgroup v1 cpu hierarchy at .*\/cpu;/);
  } finally {
    await Deno.remove(mount, { recursive: true });
  }
});

Deno.test("cgroup v1: limits are written, the runner joins every hierarchy, usage and OOM are read", async () => {
  const mount = await fakeV1();
  try {
    const support = await probeCgroups(join(mount, "vkubelet"));
    assert.ok(support.ok);
    const handle = await createCgroup(support, "uid-main-0", limited);
    const dir = (c: string) => join(mount, c, "vkubelet", "uid-main-0");
    assert.equal(handle, `v1:${dir("memory")}:${dir("cpu")}:${dir("cpuacct")}`);
    assert.equal(await Deno.readTextFile(join(dir("memory"), "memory.limit_in_bytes")), "52428800");
    assert.equal(await Deno.readTextFile(join(dir("cpu"), "cpu.cfs_period_us")), "100000");
    assert.equal(await Deno.readTextFile(join(dir("cpu"), "cpu.cfs_quota_us")), "25000");
    assert.equal(
      cgroupProcsFiles(handle),
      ["memory", "cpu", "cpuacct"].map((c) => join(dir(c), "cgroup.procs")).join(":"),
    );
    // What the kernel would show: usage, and an OOM kill in memory.oom_control.
    await Deno.writeTextFile(join(dir("cpuacct"), "cpuacct.usage"), "1500000000\n");
    await Deno.writeTextFile(join(dir("memory"), "memory.usage_in_bytes"), "41943040\n");
    assert.deepEqual(cgroupUsage(handle), { cpuNs: 1_500_000_000, memoryBytes: 41_943_040 });
    const oomControl = join(dir("memory"), "memory.oom_control");
    await Deno.writeTextFile(oomControl, "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
    assert.equal(wasOomKilled(handle), false);
    await Deno.writeTextFile(oomControl, "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n");
    assert.equal(wasOomKilled(handle), true);
    // A real cgroup directory is removed empty; the fake's files have to go first.
    for (const c of ["memory", "cpu", "cpuacct"]) {
      for await (const f of Deno.readDir(dir(c))) await Deno.remove(join(dir(c), f.name));
    }
    await removeCgroup(handle);
    for (const c of ["memory", "cpu", "cpuacct"]) {
      await assert.rejects(Deno.stat(dir(c)), Deno.errors.NotFound);
    }
  } finally {
    await Deno.remove(mount, { recursive: true });
  }
});

Deno.test("cgroup v1: no limit is -1; a tiny CPU limit gets the kernel's 1 ms minimum", async () => {
  const mount = await fakeV1();
  try {
    const support = await probeCgroups(join(mount, "vkubelet"));
    assert.ok(support.ok);
    const cpuOnly = await createCgroup(support, "a", {
      name: "a",
      resources: { limits: { cpu: "1m" } },
    });
    const memory = join(mount, "memory", "vkubelet", "a");
    assert.equal(await Deno.readTextFile(join(memory, "memory.limit_in_bytes")), "-1");
    assert.equal(
      await Deno.readTextFile(join(mount, "cpu", "vkubelet", "a", "cpu.cfs_quota_us")),
      "1000",
    );
    assert.ok(cpuOnly.startsWith("v1:"));
  } finally {
    await Deno.remove(mount, { recursive: true });
  }
});

Deno.test("cgroup v2: one directory with memory.max and cpu.max, read back from it", async () => {
  const mount = await Deno.makeTempDir({ prefix: "vk-cgroupfs-" });
  try {
    await Deno.writeTextFile(join(mount, "cgroup.controllers"), "cpuset cpu io memory pids\n");
    const support = await probeCgroups(join(mount, "vkubelet"));
    assert.deepEqual(support, { ok: true, version: 2, root: join(mount, "vkubelet") });
    assert.ok(support.ok);
    const handle = await createCgroup(support, "x", limited);
    const dir = join(mount, "vkubelet", "x");
    assert.equal(handle, dir);
    assert.equal(await Deno.readTextFile(join(dir, "memory.max")), "52428800");
    assert.equal(await Deno.readTextFile(join(dir, "cpu.max")), "25000 100000");
    assert.equal(cgroupProcsFiles(handle), join(dir, "cgroup.procs"));
    await Deno.writeTextFile(
      join(dir, "memory.events"),
      "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n",
    );
    assert.equal(wasOomKilled(handle), true);
    await Deno.writeTextFile(join(dir, "cpu.stat"), "usage_usec 2000\nuser_usec 1000\n");
    await Deno.writeTextFile(join(dir, "memory.current"), "1024\n");
    assert.deepEqual(cgroupUsage(handle), { cpuNs: 2_000_000, memoryBytes: 1024 });
  } finally {
    await Deno.remove(mount, { recursive: true });
  }
});
