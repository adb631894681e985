/**
 * Which TCP ports belong to a pod, for port-forward: the pod shares the host's network, so a
 * forward to any loopback port would reach vkubelet's or another pod's. A port is the pod's if
 * a container declares it (`ports[].containerPort`) or one of the pod's processes has a
 * listening socket on it (`/proc/net/tcp{,6}` state LISTEN, matched by socket inode against
 * the processes' `/proc/<pid>/fd`).
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { allContainers } from "../launch/container_spec.ts";
import { cgroupPids } from "../host/cgroups.ts";
import { instanceTree, readProcText } from "../host/proc.ts";
import { hostCommand } from "../host/host_tools.ts";

const decoder = new TextDecoder();
/** `st` of a listening socket in /proc/net/tcp (include/net/tcp_states.h TCP_LISTEN). */
const TCP_LISTEN = "0A";

/** The ports the pod's containers declare. */
export function declaredPorts(pod: Pod): Set<number> {
  const ports = new Set<number>();
  for (const c of allContainers(pod)) {
    for (const p of c.ports ?? []) if ((p.protocol ?? "TCP") === "TCP") ports.add(p.containerPort);
  }
  return ports;
}

/** Listening TCP sockets of the host: inode to port. */
export function listeningSockets(): Map<string, number> {
  const sockets = new Map<string, number>();
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = readProcText(file);
    } catch {
      continue; // no IPv6
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== TCP_LISTEN) continue;
      sockets.set(f[9], parseInt(f[1].split(":")[1], 16));
    }
  }
  return sockets;
}

/** Socket inodes held open by `pids` (from their /proc/<pid>/fd links). */
export function socketInodes(pids: number[]): Set<string> {
  const inodes = new Set<string>();
  if (pids.length === 0) return inodes;
  // One subprocess for every process: Deno reads /proc directly only with --allow-all.
  const out = hostCommand("sh", {
    args: [
      "-c",
      'for p; do readlink /proc/"$p"/fd/* 2>/dev/null; done; true',
      "sh",
      ...pids.map(String),
    ],
    stdout: "piped",
    stderr: "null",
  }).outputSync();
  for (const match of decoder.decode(out.stdout).matchAll(/^socket:\[(\d+)\]$/gm)) {
    inodes.add(match[1]);
  }
  return inodes;
}

/** True if `port` is the pod's: declared, or listened on by one of `pids`. */
export function podOwnsPort(pod: Pod, pids: number[], port: number): boolean {
  if (declaredPorts(pod).has(port)) return true;
  const held = socketInodes(pids);
  for (const [inode, listening] of listeningSockets()) {
    if (listening === port && held.has(inode)) return true;
  }
  return false;
}

/** The PIDs of running instances: their sessions and children, and their cgroups' members. */
export function podPids(instances: { pid: number; cgroup?: string }[]): number[] {
  const pids = new Set<number>();
  for (const i of instances) {
    for (const s of instanceTree(i.pid)) pids.add(s.pid);
    if (i.cgroup) { for (const pid of cgroupPids(i.cgroup)) pids.add(pid); }
  }
  return [...pids];
}
