/**
 * Downstream status, as the upstream pod should show it: phase, conditions, container statuses,
 * pod IPs, start time, reason and message copied from B; the host IP becomes the virtual node's,
 * since from A the pod runs there. And the terminal status reported when a pod leaves B.
 * @module
 */
import type { ContainerStatus, Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";

/** The upstream view of a downstream pod's status. */
export function upstreamStatus(downstream: Pod, hostIp: string): PodStatus {
  const s = structuredClone(downstream.status ?? {});
  const status: PodStatus = {
    phase: s.phase ?? "Pending",
    conditions: s.conditions,
    containerStatuses: s.containerStatuses,
    initContainerStatuses: s.initContainerStatuses,
    ephemeralContainerStatuses: s.ephemeralContainerStatuses,
    podIP: s.podIP,
    podIPs: s.podIPs,
    startTime: s.startTime,
    reason: s.reason,
    message: s.message,
    qosClass: s.qosClass,
    resize: s.resize,
  };
  if (s.hostIP) {
    status.hostIP = hostIp;
    status.hostIPs = [{ ip: hostIp }];
  }
  for (const [key, value] of Object.entries(status)) {
    if (value === undefined) delete (status as Record<string, unknown>)[key];
  }
  return status;
}

/**
 * The status of a pod whose downstream twin is gone: every container terminated (the contract
 * of deletePod). `Succeeded` when it was being deleted upstream, else `Failed` with `reason`.
 */
export function goneStatus(
  last: PodStatus | undefined,
  options: { deleting: boolean; reason: string; message: string; nowIso: string },
): PodStatus {
  const terminate = (c: ContainerStatus): ContainerStatus => {
    if (c.state?.terminated) return c;
    return {
      ...c,
      ready: false,
      started: false,
      state: {
        terminated: {
          exitCode: 137,
          reason: options.reason,
          message: options.message,
          startedAt: c.state?.running?.startedAt,
          finishedAt: options.nowIso,
        },
      },
    };
  };
  return {
    ...structuredClone(last ?? {}),
    phase: options.deleting ? (last?.phase === "Failed" ? "Failed" : "Succeeded") : "Failed",
    reason: options.deleting ? last?.reason : options.reason,
    message: options.deleting ? last?.message : options.message,
    conditions: (last?.conditions ?? []).map((c) =>
      ["Ready", "ContainersReady"].includes(c.type)
        ? { ...c, status: "False", reason: "PodCompleted", lastTransitionTime: options.nowIso }
        : c
    ),
    containerStatuses: (last?.containerStatuses ?? []).map(terminate),
    initContainerStatuses: last?.initContainerStatuses,
  };
}
