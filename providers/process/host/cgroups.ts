/**
 * Resource limits through cgroups: each container instance gets its own cgroup with its memory
 * and CPU limits (as the kubelet's cgroup manager sets them: kubernetes/kubernetes
 * pkg/kubelet/cm/cgroup_manager_linux.go and, for v1, opencontainers/cgroups fs), and its usage
 * and OOM kills are read back from it.
 *
 * - cgroup v2 (`cgroup.controllers` next to the root): one directory, `memory.max`, `cpu.max`;
 *   usage from `memory.current` and `cpu.stat`, OOM kills from `memory.events`.
 * - cgroup v1 (separate hierarchies, as on older distributions and hybrid hosts): a directory
 *   named like the root's last part in each of the `memory`, `cpu` and `cpuacct` hierarchies
 *   next to it (root `/sys/fs/cgroup/vkubelet` → `/sys/fs/cgroup/memory/vkubelet`, ...);
 *   `memory.limit_in_bytes`, `cpu.cfs_period_us`/`cpu.cfs_quota_us`; usage from
 *   `memory.usage_in_bytes` and `cpuacct.usage`, OOM kills from `memory.oom_control`.
 *
 * An instance's cgroup is kept (and persisted) as one string, a handle: the v2 directory, or
 * `v1:` and the v1 directories separated by `:`. Files are reached through ./sysfs.ts: Deno
 * wants `--allow-all` for `/sys`.
 * @module
 */
import type { Container } from "kubernetes-types/core/v1.d.ts";
import { basename, dirname, join } from "node:path";
import { makeSysDir, readSysText, removeSysDir, sysExists, writeSysText } from "./sysfs.ts";
import { quantityToNumber } from "../../../provider/mod.ts";

/** The v1 hierarchies used, by controller. */
export interface CgroupV1Roots {
  memory: string;
  cpu: string;
  cpuacct: string;
}

/** The cgroup tree the provider may use, or why it may not. */
export type CgroupSupport =
  | { ok: true; version: 2; root: string }
  | { ok: true; version: 1; roots: CgroupV1Roots }
  | { ok: false; reason: string };

const V1_MARKERS: Record<keyof CgroupV1Roots, string> = {
  memory: "memory.limit_in_bytes",
  cpu: "cpu.cfs_quota_us",
  cpuacct: "cpuacct.usage",
};

/** Finds cgroup v2 (cpu and memory controllers), else cgroup v1 hierarchies, and prepares them. */
export async function probeCgroups(root: string): Promise<CgroupSupport> {
  const parent = dirname(root);
  let controllers: string[];
  try {
    controllers = readSysText(join(parent, "cgroup.controllers")).trim().split(/\s+/);
  } catch {
    return await probeV1(root);
  }
  for (const needed of ["cpu", "memory"]) {
    if (!controllers.includes(needed)) {
      return { ok: false, reason: `the ${needed} controller is not available in ${parent}` };
    }
  }
  try {
    await writeSysText(join(parent, "cgroup.subtree_control"), "+cpu +memory");
    await makeSysDir(root);
    await writeSysText(join(root, "cgroup.subtree_control"), "+cpu +memory");
  } catch (err) {
    return { ok: false, reason: `cannot prepare ${root}: ${err}` };
  }
  return { ok: true, version: 2, root };
}

async function probeV1(root: string): Promise<CgroupSupport> {
  const [mount, name] = [dirname(root), basename(root)];
  const roots = {} as CgroupV1Roots;
  for (const controller of Object.keys(V1_MARKERS) as (keyof CgroupV1Roots)[]) {
    const hierarchy = join(mount, controller);
    if (!await sysExists(join(hierarchy, V1_MARKERS[controller]))) {
      return {
        ok: false,
        reason: `neither cgroup v2 at ${mount} nor a cgroup v1 ${controller} hierarchy at ` +
          `${hierarchy}; mount the controllers or set cgroupRoot under the cgroup mount`,
      };
    }
    roots[controller] = join(hierarchy, name);
    try {
      await makeSysDir(roots[controller]);
    } catch (err) {
      return { ok: false, reason: `cannot prepare ${roots[controller]}: ${err}` };
    }
  }
  return { ok: true, version: 1, roots };
}

/** Memory in bytes and CPU in cores from the container's limits; undefined when unlimited. */
function limitsOf(container: Container): { memory?: number; cpu?: number } {
  const limits = container.resources?.limits ?? {};
  const memory = limits.memory === undefined ? undefined : quantityToNumber(limits.memory);
  const cpu = limits.cpu === undefined ? undefined : quantityToNumber(limits.cpu);
  return { memory: memory || undefined, cpu: cpu || undefined };
}

const CPU_PERIOD_US = 100_000;
/** The kernel's smallest CFS quota (1 ms), as the kubelet's MinQuotaPeriod. */
const MIN_QUOTA_US = 1000;

/** `memory.max` and `cpu.max` values for a container's limits ("max" when unlimited). */
export function limitValues(container: Container): { memoryMax: string; cpuMax: string } {
  const { memory, cpu } = limitsOf(container);
  return {
    memoryMax: memory ? String(Math.round(memory)) : "max",
    cpuMax: cpu
      ? `${Math.max(Math.round(cpu * CPU_PERIOD_US), MIN_QUOTA_US)} ${CPU_PERIOD_US}`
      : `max ${CPU_PERIOD_US}`,
  };
}

/** v1 `memory.limit_in_bytes` and `cpu.cfs_quota_us` values ("-1" when unlimited). */
export function limitValuesV1(container: Container): { memoryLimit: string; cpuQuota: string } {
  const { memory, cpu } = limitsOf(container);
  return {
    memoryLimit: memory ? String(Math.round(memory)) : "-1",
    cpuQuota: cpu ? String(Math.max(Math.round(cpu * CPU_PERIOD_US), MIN_QUOTA_US)) : "-1",
  };
}

/** True if the container asks for limits the provider would have to enforce. */
export function hasLimits(container: Container): boolean {
  const limits = container.resources?.limits ?? {};
  return limits.cpu !== undefined || limits.memory !== undefined;
}

/** Creates the instance's cgroup(s) with its limits; returns its handle. */
export async function createCgroup(
  support: Extract<CgroupSupport, { ok: true }>,
  name: string,
  container: Container,
): Promise<string> {
  if (support.version === 2) {
    const dir = join(support.root, name);
    await makeSysDir(dir);
    const { memoryMax, cpuMax } = limitValues(container);
    await writeSysText(join(dir, "memory.max"), memoryMax);
    await writeSysText(join(dir, "cpu.max"), cpuMax);
    return dir;
  }
  const dirs = v1Dirs(support.roots, name);
  for (const dir of new Set(Object.values(dirs))) await makeSysDir(dir);
  const { memoryLimit, cpuQuota } = limitValuesV1(container);
  await writeSysText(join(dirs.memory, "memory.limit_in_bytes"), memoryLimit);
  await writeSysText(join(dirs.cpu, "cpu.cfs_period_us"), String(CPU_PERIOD_US));
  await writeSysText(join(dirs.cpu, "cpu.cfs_quota_us"), cpuQuota);
  return `v1:${[dirs.memory, dirs.cpu, dirs.cpuacct].join(":")}`;
}

function v1Dirs(roots: CgroupV1Roots, name: string): CgroupV1Roots {
  return {
    memory: join(roots.memory, name),
    cpu: join(roots.cpu, name),
    cpuacct: join(roots.cpuacct, name),
  };
}

/** The directories behind a handle: v2 `{ dir }`, or v1 `{ memory, cpu, cpuacct }`. */
export function parseCgroupHandle(handle: string): { dir: string } | CgroupV1Roots {
  if (!handle.startsWith("v1:")) return { dir: handle };
  const [memory, cpu, cpuacct] = handle.slice(3).split(":");
  return { memory, cpu, cpuacct };
}

/** The `cgroup.procs` files a process joins, separated by `:` (the runner writes each). */
export function cgroupProcsFiles(handle: string): string {
  const dirs = parseCgroupHandle(handle);
  const list = "dir" in dirs ? [dirs.dir] : [...new Set([dirs.memory, dirs.cpu, dirs.cpuacct])];
  return list.map((dir) => join(dir, "cgroup.procs")).join(":");
}

/** CPU (core-nanoseconds) and memory (bytes) of a cgroup, or `undefined` if it is gone. */
export function cgroupUsage(handle: string): { cpuNs: number; memoryBytes: number } | undefined {
  const dirs = parseCgroupHandle(handle);
  try {
    if ("dir" in dirs) {
      const cpu = /^usage_usec (\d+)$/m.exec(readSysText(join(dirs.dir, "cpu.stat")));
      const memory = Number(readSysText(join(dirs.dir, "memory.current")).trim());
      return { cpuNs: Number(cpu?.[1] ?? 0) * 1000, memoryBytes: memory };
    }
    const cpuNs = Number(readSysText(join(dirs.cpuacct, "cpuacct.usage")).trim());
    const memory = Number(
      readSysText(join(dirs.memory, "memory.usage_in_bytes")).trim(),
    );
    return { cpuNs, memoryBytes: memory };
  } catch {
    return undefined;
  }
}

/** True if the kernel's OOM killer killed a process of the cgroup. */
export function wasOomKilled(handle: string): boolean {
  const dirs = parseCgroupHandle(handle);
  const [file, line] = "dir" in dirs
    ? [join(dirs.dir, "memory.events"), /^oom_kill (\d+)$/m]
    : [join(dirs.memory, "memory.oom_control"), /^oom_kill (\d+)$/m];
  try {
    return Number(line.exec(readSysText(file))?.[1] ?? 0) > 0;
  } catch {
    return false;
  }
}

/** The PIDs in the instance's cgroup (v1: its memory hierarchy's, which every process joins). */
export function cgroupPids(handle: string): number[] {
  const dirs = parseCgroupHandle(handle);
  try {
    const text = readSysText(join("dir" in dirs ? dirs.dir : dirs.memory, "cgroup.procs"));
    return text.split("\n").filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * Kills every process of the cgroup, wherever it moved in the process tree (`setsid`, double
 * forks): `cgroup.kill` on v2 (Linux 5.14+), else SIGKILL to every PID in `cgroup.procs` until
 * none is left (a fork racing the walk is caught by the next round). Resolves once the cgroup
 * is empty or after 2 s.
 */
export async function killCgroup(handle: string): Promise<void> {
  const dirs = parseCgroupHandle(handle);
  if ("dir" in dirs && await sysExists(join(dirs.dir, "cgroup.kill"))) {
    await writeSysText(join(dirs.dir, "cgroup.kill"), "1").catch(() => {});
  }
  for (let round = 0; round < 200; round++) {
    const pids = cgroupPids(handle);
    if (pids.length === 0) return;
    for (const pid of pids) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch {
        // gone meanwhile
      }
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Removes an emptied cgroup; leftovers are harmless and retried at the next removal. */
export async function removeCgroup(handle: string): Promise<void> {
  const dirs = parseCgroupHandle(handle);
  const list = "dir" in dirs ? [dirs.dir] : new Set([dirs.memory, dirs.cpu, dirs.cpuacct]);
  for (const dir of list) await removeSysDir(dir);
}
