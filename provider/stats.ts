/**
 * The kubelet's `/stats/summary` document (stats/v1alpha1), as far as vkubelet and its
 * providers fill it in. Shapes follow kubernetes/kubelet pkg/apis/stats/v1alpha1/types.go; times
 * are RFC 3339 strings, counters plain JSON numbers. Re-exported by `provider/mod.ts`.
 * @module
 */

/** CPU usage at `time`. */
export interface CpuStats {
  /** When measured (RFC 3339). */
  time: string;
  /** Current rate, in billionths of a core. */
  usageNanoCores?: number;
  /** Cumulative CPU time since the container started, in core-nanoseconds. */
  usageCoreNanoSeconds?: number;
}

/** Memory usage at `time`, in bytes. */
export interface MemoryStats {
  /** When measured (RFC 3339). */
  time: string;
  /** Memory left before the limit. */
  availableBytes?: number;
  /** All memory in use, caches included. */
  usageBytes?: number;
  /** Memory in use that cannot be reclaimed (what the OOM killer sees). */
  workingSetBytes?: number;
  /** Resident anonymous memory and swap cache. */
  rssBytes?: number;
  /** Page faults so far. */
  pageFaults?: number;
  /** Major page faults so far. */
  majorPageFaults?: number;
}

/** Network counters at `time`. */
export interface NetworkStats {
  /** When measured (RFC 3339). */
  time: string;
  /** The interface's name. */
  name?: string;
  /** Bytes received. */
  rxBytes?: number;
  /** Receive errors. */
  rxErrors?: number;
  /** Bytes sent. */
  txBytes?: number;
  /** Send errors. */
  txErrors?: number;
}

/** A filesystem's size and use at `time`. */
export interface FsStats {
  /** When measured (RFC 3339). */
  time: string;
  /** Bytes free for use. */
  availableBytes?: number;
  /** Total size in bytes. */
  capacityBytes?: number;
  /** Bytes used. */
  usedBytes?: number;
  /** Inodes free. */
  inodesFree?: number;
  /** Total inodes. */
  inodes?: number;
  /** Inodes used. */
  inodesUsed?: number;
}

/** One container's usage. */
export interface ContainerStats {
  /** The container's name. */
  name: string;
  /** When it started (RFC 3339). */
  startTime: string;
  /** CPU usage. */
  cpu?: CpuStats;
  /** Memory usage. */
  memory?: MemoryStats;
  /** Its writable layer's use. */
  rootfs?: FsStats;
  /** Its logs' use. */
  logs?: FsStats;
}

/** One volume's use (a {@link FsStats} with a name). */
export interface VolumeStats extends FsStats {
  /** The volume's name in the pod spec. */
  name?: string;
  /** The claim it is bound to, for a PVC. */
  pvcRef?: { name: string; namespace: string };
}

/** One pod's usage, the sum of its containers plus pod-level figures. */
export interface PodStats {
  /** Which pod. */
  podRef: { name: string; namespace: string; uid: string };
  /** When it started (RFC 3339). */
  startTime: string;
  /** Each container's usage. */
  containers: ContainerStats[];
  /** CPU usage. */
  cpu?: CpuStats;
  /** Memory usage. */
  memory?: MemoryStats;
  /** Network counters. */
  network?: NetworkStats;
  /** Each volume's use. */
  volume?: VolumeStats[];
  /** Ephemeral storage in use (writable layers, logs, emptyDirs). */
  "ephemeral-storage"?: FsStats;
  /** How many processes run in the pod. */
  process_stats?: { process_count?: number };
}

/** The node's own usage. */
export interface NodeStats {
  /** The node's name. */
  nodeName: string;
  /** When the node started (RFC 3339). */
  startTime: string;
  /** System containers (kubelet, runtime), if any. */
  systemContainers?: ContainerStats[];
  /** CPU usage. */
  cpu?: CpuStats;
  /** Memory usage. */
  memory?: MemoryStats;
  /** Network counters. */
  network?: NetworkStats;
  /** The root filesystem's use. */
  fs?: FsStats;
  /** The image and container filesystems' use. */
  runtime?: { imageFs?: FsStats; containerFs?: FsStats };
}

/** The whole `/stats/summary` answer. */
export interface StatsSummary {
  /** The node's own usage. */
  node: NodeStats;
  /** Each pod's usage. */
  pods: PodStats[];
}
