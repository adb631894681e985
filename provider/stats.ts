/**
 * The kubelet's `/stats/summary` document (stats/v1alpha1), as far as vkubelet and its
 * providers fill it in. Shapes follow kubernetes/kubelet pkg/apis/stats/v1alpha1/types.go; times
 * are RFC 3339 strings, counters plain JSON numbers. Re-exported by `provider/mod.ts`.
 * @module
 */

/** CPU usage at `time`. */
export interface CpuStats {
  time: string;
  /** Current rate, in billionths of a core. */
  usageNanoCores?: number;
  /** Cumulative CPU time since the container started, in core-nanoseconds. */
  usageCoreNanoSeconds?: number;
}

/** Memory usage at `time`, in bytes. */
export interface MemoryStats {
  time: string;
  availableBytes?: number;
  usageBytes?: number;
  workingSetBytes?: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
}

/** Network counters at `time`. */
export interface NetworkStats {
  time: string;
  name?: string;
  rxBytes?: number;
  rxErrors?: number;
  txBytes?: number;
  txErrors?: number;
}

/** A filesystem's size and use at `time`. */
export interface FsStats {
  time: string;
  availableBytes?: number;
  capacityBytes?: number;
  usedBytes?: number;
  inodesFree?: number;
  inodes?: number;
  inodesUsed?: number;
}

/** One container's usage. */
export interface ContainerStats {
  name: string;
  startTime: string;
  cpu?: CpuStats;
  memory?: MemoryStats;
  rootfs?: FsStats;
  logs?: FsStats;
}

/** One volume's use (a {@link FsStats} with a name). */
export interface VolumeStats extends FsStats {
  name?: string;
  pvcRef?: { name: string; namespace: string };
}

/** One pod's usage, the sum of its containers plus pod-level figures. */
export interface PodStats {
  podRef: { name: string; namespace: string; uid: string };
  startTime: string;
  containers: ContainerStats[];
  cpu?: CpuStats;
  memory?: MemoryStats;
  network?: NetworkStats;
  volume?: VolumeStats[];
  "ephemeral-storage"?: FsStats;
  process_stats?: { process_count?: number };
}

/** The node's own usage. */
export interface NodeStats {
  nodeName: string;
  startTime: string;
  systemContainers?: ContainerStats[];
  cpu?: CpuStats;
  memory?: MemoryStats;
  network?: NetworkStats;
  fs?: FsStats;
  runtime?: { imageFs?: FsStats; containerFs?: FsStats };
}

/** The whole `/stats/summary` answer. */
export interface StatsSummary {
  node: NodeStats;
  pods: PodStats[];
}
