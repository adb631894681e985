/**
 * An ECI container group (DescribeContainerGroups) as one report per container — ECI restarts
 * containers itself by the group's restart policy, and says so in `RestartCount` and
 * `PreviousState` — for the kit's RemotePods, which adds the restarts of the groups before this
 * one and builds the kubelet's PodStatus.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type {
  ContainerReport,
  ContainerStateReport,
  RemoteRun,
  TerminatedReport,
} from "../../provider/mod.ts";
import type { ContainerGroup } from "./client/api.ts";

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

/** What an ECI container does now; `sinceMs` stands in for a start time ECI leaves out. */
function stateOf(
  group: ContainerGroup,
  c: EciContainer | undefined,
  id: string | undefined,
  times: { sinceMs: number; nowMs: number },
): ContainerStateReport {
  const state = c?.currentState;
  if (state?.state === "Running") {
    return { running: { startedAtMs: ms(state.startTime) ?? times.sinceMs } };
  }
  if (state?.state === "Terminated") return { terminated: terminatedOf(state, id, times.nowMs) };
  const status = group.status;
  return {
    waiting: {
      reason: state?.reason ||
        (status === "ScheduleFailed" ? "ScheduleFailed" : "ContainerCreating"),
      message: state?.message || (status ? `ECI group is ${status}` : undefined),
    },
  };
}

/** One report per named container of the group, by name. */
function reports(
  group: ContainerGroup,
  names: string[],
  list: EciContainer[] | undefined,
  times: { sinceMs: number; nowMs: number },
): Record<string, ContainerReport> {
  const out: Record<string, ContainerReport> = {};
  const groupId = group.containerGroupId;
  for (const name of names) {
    const c = list?.find((x) => x.name === name);
    const id = containerId(groupId, name);
    const state = stateOf(group, c, id, times);
    out[name] = {
      state,
      lastTerminated: c?.previousState?.state === "Terminated"
        ? terminatedOf(c.previousState, id, times.nowMs)
        : undefined,
      restartCount: c?.restartCount ?? 0,
      ready: "running" in state && (c?.ready ?? true),
      containerID: id,
    };
  }
  return out;
}

/** The group as a run of `pod`: its containers and init containers, and its IP once it has one. */
export function runOfGroup(
  pod: Pod,
  group: ContainerGroup,
  times: { sinceMs: number; nowMs: number },
): RemoteRun<ContainerGroup> {
  const names = (pod.spec?.containers ?? []).map((c) => c.name);
  const inits = (pod.spec?.initContainers ?? []).map((c) => c.name);
  const podIP = group.intranetIp || undefined;
  return {
    pod,
    handle: group,
    containers: reports(group, names, group.containers, times),
    ...(inits.length ? { initContainers: reports(group, inits, group.initContainers, times) } : {}),
    podIP,
    sandboxReady: podIP !== undefined,
  };
}

/** How each container ended when its group is deleted: as ECI last showed it, or killed now. */
export function endsOnDelete(
  pod: Pod,
  group: ContainerGroup,
  why: string,
  nowMs: number,
): Record<string, TerminatedReport> {
  const ends: Record<string, TerminatedReport> = {};
  for (const { name } of pod.spec?.containers ?? []) {
    const c = group.containers?.find((x) => x.name === name);
    const id = containerId(group.containerGroupId, name);
    ends[name] = c?.currentState?.state === "Terminated"
      ? terminatedOf(c.currentState, id, nowMs)
      : {
        exitCode: 137,
        reason: "Error",
        message: why,
        startedAtMs: ms(c?.currentState?.startTime),
        finishedAtMs: nowMs,
        containerID: id,
      };
  }
  return ends;
}
