/**
 * Status, in two steps: a container group's instance view (current and previous state, restart
 * count, per container) becomes one report per container, and the kit's status builder turns the
 * reports into the kubelet's PodStatus. ACI restarts containers itself by the group's restart
 * policy, so its restart counts are used as they are; only a group made again (after it was
 * deleted behind vkubelet's back) adds the restarts of the groups before it.
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
import type { ContainerGroup } from "./azure.ts";

/** What the provider keeps for one pod. */
export interface PodRecord {
  /** The last pod the core handed over; for an adopted group, a stand-in from its tags. */
  pod: Pod;
  /** The container group's name. */
  groupName: string;
  /** The group as the last GET (or the create) showed it; unset while it is (re)made. */
  group?: ContainerGroup;
  /** Restarts of the groups before the current one. */
  restartOffset: number;
  /** How each container of the previous group ended (a group made again). */
  lastTerminated: Map<string, TerminatedReport>;
  /** Clock time at which the group is made again (restart policy, after a back-off). */
  recreateAt?: number;
  /** The kit's crash-loop back-off for making the group again. */
  backoff?: BackoffEntry;
  /** Final container ends once the pod will not run again. */
  finished?: Map<string, TerminatedReport>;
  deleting: boolean;
  /** Clock time at which the provider first took the pod. */
  startTimeMs: number;
  /** ACI events already copied as Kubernetes events (`container/name/first/count`). */
  seenEvents: Set<string>;
  /** Adopted, events not read yet: those already there were copied before the restart. */
  adopted?: boolean;
}

type InstanceState = {
  state?: string;
  startTime?: Date;
  exitCode?: number;
  finishTime?: Date;
  detailStatus?: string;
};

/** The container's ID as vkubelet reports it: `aci://<group>/<container>`. */
export function containerId(record: PodRecord, name: string): string {
  return `aci://${record.groupName}/${name}`;
}

function containerOf(group: ContainerGroup | undefined, name: string) {
  return group?.containers.find((c) => c.name === name) ??
    group?.initContainers?.find((c) => c.name === name);
}

/** A CamelCase reason from ACI's detail status (`CrashLoopBackOff: ...` → `CrashLoopBackOff`). */
function reasonOf(detail: string | undefined, fallback: string): string {
  const head = detail?.split(/[:\s]/)[0] ?? "";
  return /^[A-Z][A-Za-z]+$/.test(head) ? head : fallback;
}

/** An ACI `Terminated` state as a kit report. */
export function terminatedReport(
  s: InstanceState,
  record: PodRecord,
  name: string,
  nowMs: number,
): TerminatedReport {
  const exitCode = s.exitCode ?? 0;
  return {
    exitCode,
    reason: reasonOf(s.detailStatus, exitCode === 0 ? "Completed" : "Error"),
    message: s.detailStatus && reasonOf(s.detailStatus, "") === "" ? s.detailStatus : undefined,
    startedAtMs: s.startTime?.getTime(),
    finishedAtMs: s.finishTime?.getTime() ?? nowMs,
    containerID: containerId(record, name),
  };
}

function stateOf(record: PodRecord, name: string, nowMs: number): ContainerStateReport {
  const finished = record.finished?.get(name);
  if (finished) return { terminated: finished };
  if (!record.group && record.recreateAt !== undefined) {
    const seconds = Math.max(0, Math.ceil((record.recreateAt - nowMs) / 1000));
    return {
      waiting: {
        reason: "CrashLoopBackOff",
        message: `back-off ${seconds}s making container group ${record.groupName} again`,
      },
    };
  }
  const current = containerOf(record.group, name)?.instanceView?.currentState as
    | InstanceState
    | undefined;
  if (current?.state === "Running") {
    return { running: { startedAtMs: current.startTime?.getTime() ?? record.startTimeMs } };
  }
  if (current?.state === "Terminated") {
    return { terminated: terminatedReport(current, record, name, nowMs) };
  }
  const failed = record.group?.provisioningState === "Failed";
  return {
    waiting: {
      reason: reasonOf(current?.detailStatus, failed ? "ProvisioningFailed" : "ContainerCreating"),
      message: current?.detailStatus ??
        (record.group?.provisioningState
          ? `container group ${record.groupName} is ${record.group.provisioningState}`
          : undefined),
    },
  };
}

/** One report per container of the pod, by name, init containers apart. */
export function containerReports(record: PodRecord, nowMs: number) {
  const report = (name: string): ContainerReport => {
    const view = containerOf(record.group, name)?.instanceView;
    const previous = view?.previousState as InstanceState | undefined;
    const state = stateOf(record, name, nowMs);
    return {
      state,
      lastTerminated: previous?.state === "Terminated"
        ? terminatedReport(previous, record, name, nowMs)
        : record.lastTerminated.get(name),
      restartCount: record.restartOffset + (view?.restartCount ?? 0),
      containerID: "waiting" in state ? undefined : containerId(record, name),
    };
  };
  const spec = record.pod.spec;
  return {
    containers: Object.fromEntries((spec?.containers ?? []).map((c) => [c.name, report(c.name)])),
    initContainers: Object.fromEntries(
      (spec?.initContainers ?? []).map((c) => [c.name, report(c.name)]),
    ),
  };
}

/** The pod's status from its record; `terminal` once it is deleted and runs no more. */
export function podStatusOf(
  record: PodRecord,
  hostIP: string,
  nowMs: number,
  terminal = false,
): PodStatus {
  const podIP = record.finished ? undefined : record.group?.ipAddress?.ip;
  return buildPodStatus(record.pod, {
    ...containerReports(record, nowMs),
    nowMs,
    startTimeMs: record.startTimeMs,
    hostIP,
    podIP: podIP ?? record.pod.status?.podIP,
    terminal,
  });
}

/**
 * How each container ends when its group is gone for good: as ACI last showed it if it had
 * ended, else `ContainerStatusUnknown` with exit code 137, as the kubelet reports a container it
 * can no longer find (pkg/kubelet/kubelet_pods.go `convertToAPIContainerStatuses`); a group
 * vkubelet deleted passes `Error` as the reason, as for a killed container.
 */
export function endsOf(
  record: PodRecord,
  why: string,
  nowMs: number,
  reason = "ContainerStatusUnknown",
) {
  const names = [
    ...(record.pod.spec?.initContainers ?? []),
    ...(record.pod.spec?.containers ?? []),
  ].map((c) => c.name);
  return new Map(names.map((name): [string, TerminatedReport] => {
    const current = containerOf(record.group, name)?.instanceView?.currentState as
      | InstanceState
      | undefined;
    if (current?.state === "Terminated") {
      return [name, terminatedReport(current, record, name, nowMs)];
    }
    return [name, {
      exitCode: 137,
      reason,
      message: why,
      startedAtMs: current?.startTime?.getTime(),
      finishedAtMs: nowMs,
      containerID: containerId(record, name),
    }];
  }));
}
