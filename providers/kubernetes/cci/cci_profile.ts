/**
 * `profile: cci`: shapes a translated pod to Huawei Cloud Container Instance's published rules
 * before it is sent, so that CCI's admission does not refuse it.
 *
 * Rules followed (CCI 1.x, the Kubernetes-compatible `/api/v1` API):
 * - "Notes and Constraints", https://support.huaweicloud.com/intl/en-us/api-cci/pro_ys.html and
 *   "Constraints", https://support.huaweicloud.com/intl/en-us/productdesc-cci/cci_03_0007.html:
 *   a pod has 0.25 to 32 vCPUs in steps of 0.25, or 48 or 64; whole GiB of memory from 1 to 512;
 *   vCPU:memory between 1:2 and 1:8; at most five containers; each container at least 0.25 vCPU
 *   and 0.2 GB and a multiple of 0.25 vCPU; requests equal to limits in app and init containers;
 *   no hostPath, hostNetwork or privileged containers.
 * - The pod's size is `max(sum of app containers, largest init container)` per resource (the
 *   same page, "Pod Specification Calculation"); a container's value is its limit, else its
 *   request, as the CCE bursting add-on's "Resource Quotas" page describes
 *   (https://support.huaweicloud.com/intl/en-us/usermanual-cci/cci_01_0117.html).
 *
 * What this does: every container's CPU is rounded up to a multiple of 0.25 (at least 0.25),
 * its memory to whole MiB (at least 0.2 GiB); the pod is then rounded up to the smallest CCI
 * size (fewest vCPUs, then least memory) that holds it, the difference going to the first app
 * container; requests are set equal to limits. Refused fields throw `InvalidInputError` naming
 * the field (the pod ends `ProviderFailed`); harmless ones are dropped and reported. Our own
 * choices, not CCI's documents: a hostPath of the time zone (`/etc/localtime`,
 * `/usr/share/zoneinfo`) is dropped rather than refused (the pod keeps its image's zone), and
 * `hostPort`s are dropped (a CCI pod has no host; its pod IP stays reachable).
 * @module
 */
import type { Container, Pod, PodSpec, ResourceRequirements } from "kubernetes-types/core/v1.d.ts";
import {
  InvalidInputError,
  parseQuantity,
  quantityMilliValue,
  quantityValue,
} from "../../../provider/mod.ts";

/** The profile names the config accepts. */
export const PROFILES = ["cci"] as const;

const QUARTER = 250; // millicores
const MIN_CONTAINER_MEMORY_MI = 205; // 0.2 GiB, rounded up to a whole MiB
const MAX_CONTAINERS = 5;
const POD_CPU_QUARTERS = [...Array.from({ length: 128 }, (_, i) => i + 1), 192, 256];
const MAX_MEMORY_GI = 512;
const TIME_ZONE_PATHS = /^\/(etc\/localtime|usr\/share\/zoneinfo)(\/.*)?$/;

/** Shapes `pod` (changed in place) to CCI's rules; returns what changed, one line each. */
export function shapePodForCci(pod: Pod): string[] {
  const spec = pod.spec!;
  const changes: string[] = [];
  refuseHostFields(spec);
  dropTimeZoneHostPaths(spec, changes);
  for (const [i, c] of spec.containers.entries()) {
    dropHostPorts(c, `spec.containers[${i}]`, changes);
  }
  const containers = spec.containers.length;
  if (containers > MAX_CONTAINERS) {
    throw refused(
      `spec.containers has ${containers} containers; CCI allows at most ${MAX_CONTAINERS} per pod`,
    );
  }
  sizeResources(spec, changes);
  return changes;
}

function refused(what: string): InvalidInputError {
  return new InvalidInputError(
    `profile cci: ${what}; change the pod or keep it off this virtual node`,
  );
}

function refuseHostFields(spec: PodSpec): void {
  if (spec.hostNetwork) {
    throw refused("spec.hostNetwork is not supported by CCI (use a LoadBalancer Service)");
  }
  for (const [i, v] of (spec.volumes ?? []).entries()) {
    if (v.hostPath && !TIME_ZONE_PATHS.test(v.hostPath.path)) {
      throw refused(
        `spec.volumes[${i}].hostPath (volume ${v.name}, path ${v.hostPath.path}) is not supported by CCI (use EVS or SFS volumes)`,
      );
    }
  }
  for (const [list, containers] of containerLists(spec)) {
    for (const [i, c] of containers.entries()) {
      if (c.securityContext?.privileged) {
        throw refused(
          `spec.${list}[${i}].securityContext.privileged (container ${c.name}) is not supported by CCI`,
        );
      }
    }
  }
}

function dropTimeZoneHostPaths(spec: PodSpec, changes: string[]): void {
  const dropped = new Set<string>();
  spec.volumes = spec.volumes?.filter((v) => {
    if (!v.hostPath) return true;
    dropped.add(v.name);
    changes.push(
      `dropped hostPath volume ${v.name} (${v.hostPath.path}): CCI has no host; the image's time zone applies`,
    );
    return false;
  });
  if (spec.volumes?.length === 0) delete spec.volumes;
  if (dropped.size === 0) return;
  for (const [, containers] of containerLists(spec)) {
    for (const c of containers) {
      c.volumeMounts = c.volumeMounts?.filter((m) => !dropped.has(m.name));
      if (c.volumeMounts?.length === 0) delete c.volumeMounts;
    }
  }
}

function dropHostPorts(c: Container, field: string, changes: string[]): void {
  for (const [i, port] of (c.ports ?? []).entries()) {
    if (port.hostPort === undefined) continue;
    changes.push(`dropped ${field}.ports[${i}].hostPort ${port.hostPort}: a CCI pod has no host`);
    delete port.hostPort;
  }
}

function containerLists(spec: PodSpec): [string, Container[]][] {
  return [["containers", spec.containers], ["initContainers", spec.initContainers ?? []]];
}

interface Size {
  milli: number;
  mi: number;
}

function sizeResources(spec: PodSpec, changes: string[]): void {
  const wanted = new Map<Container, Size>();
  for (const [, containers] of containerLists(spec)) {
    for (const c of containers) wanted.set(c, containerSize(c));
  }
  const sum = (list: Container[], key: keyof Size) =>
    list.reduce((total, c) => total + wanted.get(c)![key], 0);
  const max = (list: Container[], key: keyof Size) =>
    list.reduce((top, c) => Math.max(top, wanted.get(c)![key]), 0);
  const inits = spec.initContainers ?? [];
  const need: Size = {
    milli: Math.max(sum(spec.containers, "milli"), max(inits, "milli")),
    mi: Math.max(sum(spec.containers, "mi"), max(inits, "mi")),
  };
  const size = podSize(need);
  const first = wanted.get(spec.containers[0])!;
  first.milli += size.milli - sum(spec.containers, "milli");
  first.mi += size.mi - sum(spec.containers, "mi");
  const notes: string[] = [];
  for (const [list, containers] of containerLists(spec)) {
    for (const c of containers) {
      const note = applySize(c, wanted.get(c)!);
      if (note) notes.push(`${list === "initContainers" ? "init " : ""}${c.name}: ${note}`);
    }
  }
  if (notes.length > 0) {
    changes.push(
      `pod sized ${size.milli / 1000} vCPU / ${size.mi / 1024} GiB (requests = limits); ${
        notes.join("; ")
      }`,
    );
  }
}

/** The container's CPU (millicores) and memory (MiB): its limit, else its request, rounded up. */
function containerSize(c: Container): Size {
  const value = (name: string) => c.resources?.limits?.[name] ?? c.resources?.requests?.[name];
  const cpu = value("cpu"), memory = value("memory");
  const milli = cpu === undefined ? 0 : Number(quantityMilliValue(parseQuantity(cpu)));
  const bytes = memory === undefined ? 0 : Number(quantityValue(parseQuantity(memory)));
  return {
    milli: Math.max(QUARTER, Math.ceil(milli / QUARTER) * QUARTER),
    mi: Math.max(MIN_CONTAINER_MEMORY_MI, Math.ceil(bytes / 2 ** 20)),
  };
}

/** The smallest CCI pod size holding `need`: fewest vCPUs, then least memory. */
function podSize(need: Size): Size {
  const gi = Math.max(1, Math.ceil(need.mi / 1024));
  for (const quarters of POD_CPU_QUARTERS) {
    if (quarters * QUARTER < need.milli) continue;
    // vCPU:memory from 1:2 to 1:8, i.e. quarters/2 <= GiB <= 2 * quarters.
    const low = Math.max(gi, Math.ceil(quarters / 2));
    if (low <= Math.min(MAX_MEMORY_GI, 2 * quarters)) {
      return { milli: quarters * QUARTER, mi: low * 1024 };
    }
  }
  throw refused(
    `the pod needs ${need.milli / 1000} vCPU and ${
      Math.ceil(need.mi / 1024)
    } GiB; CCI's largest pod has 64 vCPUs and 512 GiB`,
  );
}

/** Sets requests = limits = `size` for CPU and memory; returns what changed, if anything. */
function applySize(c: Container, size: Size): string | undefined {
  const before = c.resources ?? {};
  const cpu = formatCpu(size.milli), memory = formatMemory(size.mi);
  const limits: Record<string, string> = {
    ...before.requests,
    ...before.limits,
    cpu,
    memory,
  };
  const next: ResourceRequirements = { ...before, limits, requests: { ...limits } };
  const notes: string[] = [];
  for (const name of ["cpu", "memory"]) {
    const wanted = name === "cpu" ? cpu : memory;
    const was = [before.requests?.[name], before.limits?.[name]];
    if (was.every((v) => v !== undefined && String(v) === wanted)) continue;
    notes.push(`${name} ${was.map((v) => v ?? "none").join("/")} -> ${wanted}`);
  }
  const other = Object.keys(limits).filter((k) =>
    k !== "cpu" && k !== "memory" && String(before.requests?.[k]) !== String(limits[k])
  );
  if (other.length > 0) notes.push(`${other.join(", ")} request = limit`);
  c.resources = next;
  return notes.length > 0 ? `${notes.join(", ")} (request/limit)` : undefined;
}

function formatCpu(milli: number): string {
  return milli % 1000 === 0 ? String(milli / 1000) : `${milli}m`;
}

function formatMemory(mi: number): string {
  return mi % 1024 === 0 ? `${mi / 1024}Gi` : `${mi}Mi`;
}
