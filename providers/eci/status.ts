/**
 * Status, in two steps: an ECI container group (DescribeContainerGroups) becomes one report per
 * container — ECI restarts containers itself by the group's restart policy, and says so in
 * `RestartCount` and `PreviousState` — and the kit's builder (`buildPodStatus`) turns the reports
 * into the kubelet's PodStatus. A group deleted behind vkubelet's back is made again by the
 * restart policy; the restarts of the groups before it are kept on the {@link PodRecord}.
 * @module
 */
import type { Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import {
  type BackoffEntry,
  buildPodStatus,
  type ContainerReport,
  type ContainerStateReport,
  type TerminatedReport,
} from "../../provider/mod.ts";
import type { ContainerGroup } from "./api.ts";

/** What the provider keeps for one pod. */
export interface PodRecord {
  /** The last pod the core handed over; for an adopted group, a stub from its tags. */
  pod: Pod;
  /** The current group; unset while it is being made again, and once the pod has finished. */
  groupId?: string;
  /** The current group as ECI last showed it. */
  group?: ContainerGroup;
  /** How many times the group was made again (the create token and a tag carry it). */
  generation: number;
  /** Container restarts in the groups before the current one, by container name. */
  restartsBefore: Map<string, number>;
  /** How each container of the previous group ended, by name. */
  lastTerminated: Map<string, TerminatedReport>;
  /** Clock time at which the group is made again (after the kubelet's back-off). */
  recreateAt?: number;
  /** The kit's crash-loop back-off for making the group again. */
  backoff?: BackoffEntry;
  /** Final container ends once the pod will not run again. */
  finished?: Map<string, TerminatedReport>;
  deleting: boolean;
  /** Clock time at which the provider first took the pod. */
  startTimeMs: number;
  /** ECI events already told (`reason/firstTimestamp/message`). */
  seenEvents: Set<string>;
}

type EciContainer = NonNullable<ContainerGroup["containers"]>[number];
type EciState = EciContainer["currentState"];

function ms(time: string | undefined): number | undefined {
  const t = time ? Date.parse(time) : NaN;
  return Number.isNaN(t) ? undefined : t;
}

/** A container's ID as ECI has none: `eci://<group>/<container>`. */
export function containerId(groupId: string | undefined, name: string): string | undefined {
  return groupId ? `eci://${groupId}/${name}` : undefined;
}

function terminatedOf(state: EciState, id: string | undefined, nowMs: number): TerminatedReport {
  return {
    exitCode: state?.exitCode ?? 128,
    reason: state?.reason || undefined,
    message: state?.message || state?.detailStatus || undefined,
    signal: state?.signal || undefined,
    startedAtMs: ms(state?.startTime),
    finishedAtMs: ms(state?.finishTime) ?? nowMs,
    containerID: id,
  };
}

/** The pod's container names; from the group for an adopted pod not yet handed over. */
export function containerNames(record: PodRecord, init = false): string[] {
  const spec = init ? record.pod.spec?.initContainers : record.pod.spec?.containers;
  const group = init ? record.group?.initContainers : record.group?.containers;
  return spec?.map((c) => c.name) ?? group?.map((c) => c.name ?? "") ?? [];
}

function stateOf(
  record: PodRecord,
  c: EciContainer | undefined,
  name: string,
  nowMs: number,
): ContainerStateReport {
  const finished = record.finished?.get(name);
  if (finished) return { terminated: finished };
  if (!record.groupId) {
    if (record.recreateAt === undefined) return { waiting: { reason: "ContainerCreating" } };
    const seconds = Math.max(0, Math.ceil((record.recreateAt - nowMs) / 1000));
    return {
      waiting: {
        reason: "CrashLoopBackOff",
        message: `back-off ${seconds}s re-creating the deleted ECI group`,
      },
    };
  }
  const state = c?.currentState;
  const id = containerId(record.groupId, name);
  if (state?.state === "Running") {
    return { running: { startedAtMs: ms(state.startTime) ?? record.startTimeMs } };
  }
  if (state?.state === "Terminated") return { terminated: terminatedOf(state, id, nowMs) };
  const status = record.group?.status;
  return {
    waiting: {
      reason: state?.reason ||
        (status === "ScheduleFailed" ? "ScheduleFailed" : "ContainerCreating"),
      message: state?.message || (status ? `ECI group is ${status}` : undefined),
    },
  };
}

/** One report per container (or init container) of the pod, by name. */
export function containerReports(
  record: PodRecord,
  nowMs: number,
  init = false,
): Record<string, ContainerReport> {
  const reports: Record<string, ContainerReport> = {};
  const group = init ? record.group?.initContainers : record.group?.containers;
  for (const name of containerNames(record, init)) {
    const c = record.groupId ? group?.find((x) => x.name === name) : undefined;
    const state = stateOf(record, c, name, nowMs);
    const previous = c?.previousState?.state === "Terminated"
      ? terminatedOf(c.previousState, containerId(record.groupId, name), nowMs)
      : record.lastTerminated.get(name);
    reports[name] = {
      state,
      lastTerminated: previous,
      restartCount: (record.restartsBefore.get(name) ?? 0) + (c?.restartCount ?? 0),
      ready: "running" in state && (c?.ready ?? true),
      containerID: containerId(record.groupId, name),
    };
  }
  return reports;
}

/** The pod's status from its record; `terminal` once it is deleted and runs no more. */
export function podStatusOf(
  record: PodRecord,
  hostIP: string,
  nowMs: number,
  terminal = false,
): PodStatus {
  const podIP = record.finished || !record.groupId
    ? undefined
    : record.group?.intranetIp || undefined;
  const initContainers = record.pod.spec?.initContainers?.length
    ? containerReports(record, nowMs, true)
    : undefined;
  return buildPodStatus(record.pod, {
    containers: containerReports(record, nowMs),
    initContainers,
    nowMs,
    startTimeMs: record.startTimeMs,
    hostIP,
    podIP: podIP ?? record.pod.status?.podIP,
    sandboxReady: podIP !== undefined,
    terminal,
  });
}

/** How each container ended when its group vanished or the pod is deleted. */
export function endsNow(
  record: PodRecord,
  why: string,
  nowMs: number,
  exitCode = 137,
): Map<string, TerminatedReport> {
  const ends = new Map<string, TerminatedReport>();
  for (const name of containerNames(record)) {
    const c = record.group?.containers?.find((x) => x.name === name);
    if (record.groupId && c?.currentState?.state === "Terminated") {
      ends.set(name, terminatedOf(c.currentState, containerId(record.groupId, name), nowMs));
      continue;
    }
    const last = record.lastTerminated.get(name);
    if (!record.groupId && last) {
      ends.set(name, last);
      continue;
    }
    ends.set(name, {
      exitCode,
      reason: "Error",
      message: why,
      startedAtMs: ms(c?.currentState?.startTime),
      finishedAtMs: nowMs,
      containerID: containerId(record.groupId, name),
    });
  }
  return ends;
}
