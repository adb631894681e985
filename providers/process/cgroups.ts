/**
 * Resource limits through cgroup v2, where the host has it: each container instance gets its
 * own cgroup under the configured root, with `memory.max` and `cpu.max` from the container's
 * limits (as the kubelet's cgroup manager sets them: kubernetes/kubernetes
 * pkg/kubelet/cm/cgroup_manager_linux.go), and its usage and OOM kills are read back from it.
 * On a host without cgroup v2 controllers (cgroup v1 or a hybrid layout) limits are reported as
 * not enforced instead.
 * @module
 */
import type { Container } from "kubernetes-types/core/v1.d.ts";
import { dirname, join } from "node:path";
import { quantityToNumber } from "../../k8s/quantity.ts";

/** The cgroup v2 tree the provider may use, or why it may not. */
export type CgroupSupport = { ok: true; root: string } | { ok: false; reason: string };

/** Checks for cgroup v2 with the cpu and memory controllers and prepares `root`. */
export async function probeCgroups(root: string): Promise<CgroupSupport> {
  const parent = dirname(root);
  let controllers: string[];
  try {
    controllers = (await Deno.readTextFile(join(parent, "cgroup.controllers"))).trim().split(/\s+/);
  } catch {
    return { ok: false, reason: `no cgroup v2 hierarchy at ${parent} (cgroup v1 or hybrid host)` };
  }
  for (const needed of ["cpu", "memory"]) {
    if (!controllers.includes(needed)) {
      return { ok: false, reason: `the ${needed} controller is not available in ${parent}` };
    }
  }
  try {
    await Deno.writeTextFile(join(parent, "cgroup.subtree_control"), "+cpu +memory");
    await Deno.mkdir(root, { recursive: true });
    await Deno.writeTextFile(join(root, "cgroup.subtree_control"), "+cpu +memory");
  } catch (err) {
    return { ok: false, reason: `cannot prepare ${root}: ${err}` };
  }
  return { ok: true, root };
}

/** `memory.max` and `cpu.max` values for a container's limits ("max" when unlimited). */
export function limitValues(container: Container): { memoryMax: string; cpuMax: string } {
  const limits = container.resources?.limits ?? {};
  const memory = limits.memory === undefined ? undefined : quantityToNumber(limits.memory);
  const cpu = limits.cpu === undefined ? undefined : quantityToNumber(limits.cpu);
  const period = 100_000;
  return {
    memoryMax: memory ? String(Math.round(memory)) : "max",
    cpuMax: cpu ? `${Math.max(Math.round(cpu * period), 1000)} ${period}` : `max ${period}`,
  };
}

/** True if the container asks for limits the provider would have to enforce. */
export function hasLimits(container: Container): boolean {
  const limits = container.resources?.limits ?? {};
  return limits.cpu !== undefined || limits.memory !== undefined;
}

/** Creates the instance's cgroup with its limits; the runner moves itself into it. */
export async function createCgroup(root: string, name: string, container: Container) {
  const dir = join(root, name);
  await Deno.mkdir(dir, { recursive: true });
  const { memoryMax, cpuMax } = limitValues(container);
  await Deno.writeTextFile(join(dir, "memory.max"), memoryMax);
  await Deno.writeTextFile(join(dir, "cpu.max"), cpuMax);
  return dir;
}

/** CPU (core-nanoseconds) and memory (bytes) of a cgroup, or `undefined` if it is gone. */
export function cgroupUsage(dir: string): { cpuNs: number; memoryBytes: number } | undefined {
  try {
    const cpu = /^usage_usec (\d+)$/m.exec(Deno.readTextFileSync(join(dir, "cpu.stat")));
    const memory = Number(Deno.readTextFileSync(join(dir, "memory.current")).trim());
    return { cpuNs: Number(cpu?.[1] ?? 0) * 1000, memoryBytes: memory };
  } catch {
    return undefined;
  }
}

/** True if the kernel's OOM killer killed a process of the cgroup. */
export function wasOomKilled(dir: string): boolean {
  try {
    const match = /^oom_kill (\d+)$/m.exec(Deno.readTextFileSync(join(dir, "memory.events")));
    return Number(match?.[1] ?? 0) > 0;
  } catch {
    return false;
  }
}

/** Removes an emptied cgroup; leftovers are harmless and retried at the next removal. */
export async function removeCgroup(dir: string): Promise<void> {
  await Deno.remove(dir).catch(() => {});
}
