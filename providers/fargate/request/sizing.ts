/**
 * Task size: Fargate runs a task only at one of a fixed set of CPU/memory combinations, so the
 * pod's requests (or limits, where larger) are added up and rounded up to the smallest
 * combination that holds them. The table is AWS's "Task CPU and memory" for Fargate (Linux).
 * @module
 */
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError, requestOrLimit } from "../../../provider/mod.ts";

const MIB = 1024 * 1024;

function range(from: number, to: number, step: number): number[] {
  const out: number[] = [];
  for (let v = from; v <= to; v += step) out.push(v);
  return out;
}

/** Fargate's task CPU units (1024 = 1 vCPU) and the memory sizes (MiB) each allows. */
export const FARGATE_SIZES: ReadonlyArray<{ cpu: number; memory: readonly number[] }> = [
  { cpu: 256, memory: [512, 1024, 2048] },
  { cpu: 512, memory: range(1024, 4096, 1024) },
  { cpu: 1024, memory: range(2048, 8192, 1024) },
  { cpu: 2048, memory: range(4096, 16384, 1024) },
  { cpu: 4096, memory: range(8192, 30720, 1024) },
  { cpu: 8192, memory: range(16384, 61440, 4096) },
  { cpu: 16384, memory: range(32768, 122880, 8192) },
];

/** A task size, and what the pod asked for before rounding. */
export interface TaskSize {
  /** CPU units (1024 per vCPU). */
  cpu: number;
  /** MiB. */
  memory: number;
  /** What the pod's containers add up to, in the same units. */
  wanted: { cpu: number; memory: number };
  /** True when the size is larger than what the pod asked for. */
  rounded: boolean;
}

/**
 * One container's CPU units and MiB: the larger of request and limit, rounded up; `field` names
 * it in errors (`spec.containers[0]`).
 */
export function containerSize(
  container: Container,
  field: string,
): { cpu: number; memory: number } {
  return {
    cpu: Math.ceil(requestOrLimit(container, "cpu", field) * 1024 - 1e-9),
    memory: Math.ceil(requestOrLimit(container, "memory", field) / MIB - 1e-9),
  };
}

/**
 * The smallest Fargate size that holds all of the pod's containers — their sum, or the largest
 * init container if more, as the kubelet's effective request (init containers run one at a time,
 * before the others); a pod that asks for nothing
 * gets the smallest (0.25 vCPU, 512 MiB). Throws {@link InvalidInputError} when no size is large
 * enough.
 */
export function taskSize(pod: Pod): TaskSize {
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
  for (const size of FARGATE_SIZES) {
    if (size.cpu < cpu) continue;
    const fits = size.memory.find((m) => m >= memory);
    if (fits === undefined) continue;
    return {
      cpu: size.cpu,
      memory: fits,
      wanted: { cpu, memory },
      rounded: size.cpu > cpu || fits > memory,
    };
  }
  throw new InvalidInputError(
    `spec.containers[*].resources: the pod asks for ${
      cpu / 1024
    } vCPU and ${memory} MiB in all; the largest Fargate task is 16 vCPU with 120 GiB`,
  );
}
