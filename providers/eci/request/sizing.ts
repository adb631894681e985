/**
 * Group size: ECI runs a group at one of a fixed set of vCPU/memory specifications, so the pod's
 * requests (or limits, where larger) are added up — init containers run one at a time, so the
 * largest of them counts, as in the kubelet's effective pod request — and rounded up to the
 * smallest specification that holds them. The table is ECI's "vCPU and memory specifications".
 * @module
 */
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError, requestOrLimit } from "../../../provider/mod.ts";

const GIB = 1024 ** 3;

/** ECI's vCPU counts and the memory sizes (GiB) each allows. */
export const ECI_SIZES: ReadonlyArray<{ cpu: number; memory: readonly number[] }> = [
  { cpu: 0.25, memory: [0.5, 1] },
  { cpu: 0.5, memory: [1, 2] },
  { cpu: 1, memory: [2, 4, 8] },
  { cpu: 2, memory: [1, 2, 4, 8, 16] },
  { cpu: 4, memory: [4, 8, 16, 32] },
  { cpu: 8, memory: [4, 8, 16, 32, 64] },
  { cpu: 12, memory: [12, 24, 48, 96] },
  { cpu: 16, memory: [16, 32, 64, 128] },
  { cpu: 24, memory: [24, 48, 96, 192] },
  { cpu: 32, memory: [32, 64, 128, 256] },
  { cpu: 52, memory: [96, 192, 384] },
  { cpu: 64, memory: [128, 256, 512] },
];

/** A group size, and what the pod asked for before rounding. */
export interface GroupSize {
  /** vCPUs. */
  cpu: number;
  /** GiB. */
  memory: number;
  /** What the pod's containers add up to, in the same units. */
  wanted: { cpu: number; memory: number };
  /** True when the size is larger than what the pod asked for. */
  rounded: boolean;
}

/** One container's vCPUs and GiB: the larger of request and limit. */
export function containerSize(c: Container, field: string): { cpu: number; memory: number } {
  return { cpu: requestOrLimit(c, "cpu", field), memory: requestOrLimit(c, "memory", field) / GIB };
}

/**
 * The smallest ECI specification that holds the pod; a pod that asks for nothing gets the
 * smallest (0.25 vCPU, 0.5 GiB). Throws {@link InvalidInputError} naming the field when no
 * specification is large enough.
 */
export function groupSize(pod: Pod): GroupSize {
  let cpu = 0, memory = 0;
  (pod.spec?.containers ?? []).forEach((c, i) => {
    const size = containerSize(c, `spec.containers[${i}]`);
    cpu += size.cpu;
    memory += size.memory;
  });
  (pod.spec?.initContainers ?? []).forEach((c, i) => {
    const size = containerSize(c, `spec.initContainers[${i}]`);
    cpu = Math.max(cpu, size.cpu);
    memory = Math.max(memory, size.memory);
  });
  for (const size of ECI_SIZES) {
    if (size.cpu + 1e-9 < cpu) continue;
    const fits = size.memory.find((m) => m + 1e-9 >= memory);
    if (fits === undefined) continue;
    return {
      cpu: size.cpu,
      memory: fits,
      wanted: { cpu, memory },
      rounded: size.cpu > cpu || fits > memory,
    };
  }
  const largest = ECI_SIZES.at(-1)!;
  const field = cpu > largest.cpu ? "cpu" : "memory";
  throw new InvalidInputError(
    `spec.containers[*].resources.requests.${field}: the pod asks for ${round(cpu)} vCPU and ${
      round(memory)
    } GiB in all; ECI's largest specification is ${largest.cpu} vCPU with ${
      largest.memory.at(-1)
    } GiB (and ${
      cpu > largest.cpu ? "" : "each vCPU count allows only some memory sizes; "
    }lower the requests or limits)`,
  );
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}
