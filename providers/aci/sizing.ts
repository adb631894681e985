/**
 * A container's resources in ACI's units: CPU in cores rounded up to a hundredth (at least 0.01),
 * memory in GB (10^9 bytes) rounded up to a tenth (at least 0.1). A container without requests
 * gets ACI's usual default, 1 core and 1.5 GB (virtual-kubelet/azure-aci does the same). Limits
 * map the same way. A group's requests add up, and may not pass the location's per-group maximum
 * (from `Location_ListCapabilities`, or the config's `maxGroupCpu`/`maxGroupMemoryGB`).
 * @module
 */
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError, quantityToNumber } from "../../provider/mod.ts";

/** ACI's resource requirements of one container (`ResourceRequirements`). */
export interface AciResources {
  requests: { cpu: number; memoryInGB: number };
  limits?: { cpu?: number; memoryInGB?: number };
}

/** The per-group maximum in the location. */
export interface GroupLimits {
  maxCpu: number;
  maxMemoryInGB: number;
}

/** Requests when a container has none (cores, GB). */
export const DEFAULT_REQUESTS = { cpu: 1, memoryInGB: 1.5 };

/** Cores, rounded up to 0.01. */
export function aciCpu(quantity: string): number {
  const cores = quantityToNumber(quantity) ?? 0;
  return Math.max(0.01, Math.ceil(Math.round(cores * 1e6) / 1e4) / 100);
}

/** GB (10^9 bytes), rounded up to 0.1. */
export function aciMemoryGB(quantity: string): number {
  const bytes = quantityToNumber(quantity) ?? 0;
  return Math.max(0.1, Math.ceil(Math.round(bytes / 1e5) / 1e3) / 10);
}

function field(container: number, kind: "requests" | "limits", what: string): string {
  return `spec.containers[${container}].resources.${kind}.${what}`;
}

/** One container's ACI resources; refuses extended resources ACI cannot give. */
export function containerResources(c: Container, index: number): AciResources {
  const { requests = {}, limits = {} } = c.resources ?? {};
  for (const name of new Set([...Object.keys(requests), ...Object.keys(limits)])) {
    if (name === "cpu" || name === "memory" || name === "ephemeral-storage") continue;
    throw new InvalidInputError(
      `${
        field(index, "requests", name)
      }: ACI container groups offer cpu and memory only; remove ${name} or run the pod on another node`,
    );
  }
  const out: AciResources = {
    requests: {
      cpu: requests.cpu ? aciCpu(requests.cpu) : DEFAULT_REQUESTS.cpu,
      memoryInGB: requests.memory ? aciMemoryGB(requests.memory) : DEFAULT_REQUESTS.memoryInGB,
    },
  };
  if (limits.cpu || limits.memory) {
    out.limits = {
      ...(limits.cpu ? { cpu: aciCpu(limits.cpu) } : {}),
      ...(limits.memory ? { memoryInGB: aciMemoryGB(limits.memory) } : {}),
    };
    // ACI wants requests at or below limits; Kubernetes already refuses the opposite, but a
    // request left to its default may pass a small limit.
    if (out.limits.cpu !== undefined && !requests.cpu) out.requests.cpu = out.limits.cpu;
    if (out.limits.memoryInGB !== undefined && !requests.memory) {
      out.requests.memoryInGB = out.limits.memoryInGB;
    }
  }
  return out;
}

/** Every container's resources; refuses a pod whose group would pass `limits`, naming the field. */
export function podResources(pod: Pod, limits: GroupLimits, location: string): AciResources[] {
  const out = (pod.spec?.containers ?? []).map(containerResources);
  const cpu = round(out.reduce((sum, r) => sum + r.requests.cpu, 0), 100);
  const memory = round(out.reduce((sum, r) => sum + r.requests.memoryInGB, 0), 10);
  const problems: string[] = [];
  if (cpu > limits.maxCpu) {
    problems.push(
      `spec.containers[*].resources.requests.cpu: the containers ask for ${cpu} cores together (after ACI's rounding); a container group in ${location} takes at most ${limits.maxCpu}`,
    );
  }
  if (memory > limits.maxMemoryInGB) {
    problems.push(
      `spec.containers[*].resources.requests.memory: the containers ask for ${memory} GB together (after ACI's rounding); a container group in ${location} takes at most ${limits.maxMemoryInGB} GB`,
    );
  }
  out.forEach((r, i) => {
    if ((r.limits?.cpu ?? 0) > limits.maxCpu) {
      problems.push(`${field(i, "limits", "cpu")}: ${r.limits!.cpu} passes ACI's ${limits.maxCpu}`);
    }
    if ((r.limits?.memoryInGB ?? 0) > limits.maxMemoryInGB) {
      problems.push(
        `${field(i, "limits", "memory")}: ${
          r.limits!.memoryInGB
        } GB passes ACI's ${limits.maxMemoryInGB} GB`,
      );
    }
  });
  if (problems.length) {
    throw new InvalidInputError(`${problems.join("; ")}; lower the requests or limits`);
  }
  return out;
}

function round(n: number, per: number): number {
  return Math.round(n * per) / per;
}
