/**
 * The process provider's pod records as the kit's status builder reads them
 * (provider/pod_status.ts): each container's running instance, back-off or last termination
 * becomes a container report; phase and conditions are the kit's.
 * @module
 */
import type { Container, PodCondition, PodStatus } from "kubernetes-types/core/v1.d.ts";
import {
  buildPodStatus,
  type ContainerReport,
  isTerminalPhase,
  type TerminatedReport,
} from "../../../provider/mod.ts";
import type { ContainerRecord, PodRecord, Termination } from "../state/state.ts";

/** Extra facts for the status that the record does not hold. */
export interface StatusExtras {
  nowMs: number;
  hostIp: string;
  volumesReady: boolean;
  /** Conditions of the provider's own (e.g. volumes not mounted at their paths). */
  extraConditions?: PodCondition[];
  /** The status reported last: transition times are kept from it. */
  previous?: PodStatus;
}

function terminated(t: Termination): TerminatedReport {
  return {
    exitCode: t.exitCode,
    reason: t.reason,
    ...(t.message ? { message: t.message } : {}),
    startedAtMs: t.startedAtMs,
    finishedAtMs: t.finishedAtMs,
    containerID: t.containerId,
  };
}

/** The report of one container; undefined while it has never been started. */
function containerReport(
  c: Container,
  r: ContainerRecord | undefined,
): ContainerReport | undefined {
  if (!r) return undefined;
  const base = { restartCount: r.restartCount, imageID: `process://${c.image ?? ""}` };
  // In back-off the exit that caused it is the last state, as the kubelet shows it.
  const last = r.waiting && !r.running ? r.terminated ?? r.lastTermination : r.lastTermination;
  const lastTerminated = last ? { lastTerminated: terminated(last) } : {};
  if (r.running) {
    return {
      ...base,
      ...lastTerminated,
      state: { running: { startedAtMs: r.running.startedAtMs } },
      containerID: r.running.containerId,
      ready: r.running.ready,
      started: r.running.started,
    };
  }
  if (r.waiting) return { ...base, ...lastTerminated, state: { waiting: r.waiting } };
  if (r.terminated) {
    return { ...base, ...lastTerminated, state: { terminated: terminated(r.terminated) } };
  }
  // Between a restart and the new instance: waiting, with the exit before it.
  if (last) {
    return { ...base, ...lastTerminated, state: { waiting: { reason: "ContainerCreating" } } };
  }
  return undefined;
}

function reports(containers: Container[] | undefined, record: PodRecord) {
  const out: Record<string, ContainerReport> = {};
  for (const c of containers ?? []) {
    const report = containerReport(c, record.containers[c.name]);
    if (report) out[c.name] = report;
  }
  return out;
}

/** The full status of `record`. */
export function podStatus(record: PodRecord, extras: StatusExtras): PodStatus {
  return buildPodStatus(record.pod, {
    containers: reports(record.pod.spec?.containers, record),
    initContainers: reports(record.pod.spec?.initContainers, record),
    ephemeralContainers: reports(
      record.pod.spec?.ephemeralContainers as Container[] | undefined,
      record,
    ),
    nowMs: extras.nowMs,
    startTimeMs: record.startTimeMs,
    podIP: record.podIp,
    podIPs: record.podIps,
    hostIP: extras.hostIp,
    previous: extras.previous,
    extraConditions: extras.extraConditions,
    sandboxReady: extras.volumesReady,
    terminal: record.deleting,
  });
}

/** The phase `record` is in now, as its status would say. */
export function phaseOf(record: PodRecord, nowMs: number): PodStatus["phase"] {
  return podStatus(record, { nowMs, hostIp: "", volumesReady: true }).phase;
}

/**
 * True when the pod would be finished with `sidecars` stopped: its regular containers are done
 * for good, and the kubelet stops the sidecars (kuberuntime_manager.go `computePodActions`).
 */
export function doneWithoutSidecars(
  record: PodRecord,
  sidecars: Container[],
  nowMs: number,
): boolean {
  const containers = { ...record.containers };
  for (const c of sidecars) {
    const terminated = {
      instance: 0,
      exitCode: 0,
      reason: "Completed",
      startedAtMs: nowMs,
      finishedAtMs: nowMs,
      containerId: "",
    };
    containers[c.name] = { ...containers[c.name], running: undefined, terminated };
  }
  const status = podStatus({ ...record, containers }, { nowMs, hostIp: "", volumesReady: true });
  return isTerminalPhase(status.phase);
}
