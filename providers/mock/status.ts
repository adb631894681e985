/**
 * The mock's container runs as the kit's status builder reads them (provider/pod_status.ts):
 * every container running and ready unless a test hook made it exit or fail to start, regular
 * init containers completed when the pod starts, sidecars (init containers with restartPolicy
 * Always) running beside the containers. Phase and conditions are the kit's.
 * @module
 */
import type { Container, Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import {
  buildPodStatus,
  type ContainerReport,
  isSidecar,
  type TerminatedReport,
} from "../../provider/mod.ts";

/** How a container run ended. */
export interface ContainerExit {
  exitCode: number;
  finishedAtMs: number;
}

/** One start of one container: when, how often it restarted, with which image, and its state. */
export interface ContainerRun {
  startedAtMs: number;
  restartCount: number;
  image: string;
  /** This run has ended and will not restart: the container is terminated. */
  exited?: ContainerExit;
  /** The container waits to (re)start: `CrashLoopBackOff`, `CreateContainerError`. */
  waiting?: { reason: string; message: string };
  /** The run before this one: the kubelet's `lastState.terminated`. */
  previous?: ContainerExit & { startedAtMs: number; restartCount: number };
}

/** True while the run is neither terminated nor waiting. */
export function isRunning(run: ContainerRun): boolean {
  return !run.exited && !run.waiting;
}

/** What a status is built from besides the pod itself. */
export interface StatusInputs {
  nowMs: number;
  podStartMs: number;
  podIp: string;
  hostIp: string;
  /** Current run of each container and sidecar, by name. */
  runs: Map<string, ContainerRun>;
}

/** A stable hex digest of `text` (FNV-1a, repeated with different seeds), `hexLength` long. */
export function digest(text: string, hexLength = 16): string {
  let out = "";
  for (let seed = 0; out.length < hexLength; seed++) {
    let hash = 0x811c9dc5 ^ seed;
    for (let i = 0; i < text.length; i++) {
      hash ^= text.charCodeAt(i);
      hash = Math.imul(hash, 0x01000193);
    }
    out += (hash >>> 0).toString(16).padStart(8, "0");
  }
  return out.slice(0, hexLength);
}

/** The container ID the mock reports: changes with every restart. */
export function containerId(pod: Pod, container: string, restartCount: number): string {
  const uid = pod.metadata?.uid ?? `${pod.metadata?.namespace}/${pod.metadata?.name}`;
  return `mock://${digest(`${uid}/${container}/${restartCount}`, 32)}`;
}

/** The image ID the mock reports for an image reference; one string per image. */
export function imageId(image: string): string {
  let id = imageIds.get(image);
  if (id === undefined) {
    id = `mock://${image}@sha256:${digest(image, 64)}`;
    if (imageIds.size >= 1024) imageIds.clear();
    imageIds.set(image, id);
  }
  return id;
}

const imageIds = new Map<string, string>();

/** The containers that run for the pod's whole life: sidecars and regular containers. */
export function longRunningContainers(pod: Pod): Container[] {
  return [...(pod.spec?.initContainers ?? []).filter(isSidecar), ...(pod.spec?.containers ?? [])];
}

function exitReport(
  pod: Pod,
  name: string,
  run: ContainerExit & { startedAtMs: number; restartCount: number },
): TerminatedReport {
  return {
    exitCode: run.exitCode,
    startedAtMs: run.startedAtMs,
    finishedAtMs: run.finishedAtMs,
    containerID: containerId(pod, name, run.restartCount),
  };
}

/** The report of a container from its current run. */
function runReport(pod: Pod, name: string, run: ContainerRun): ContainerReport {
  const report: ContainerReport = {
    state: run.waiting
      ? { waiting: run.waiting }
      : run.exited
      ? { terminated: exitReport(pod, name, { ...run, ...run.exited }) }
      : { running: { startedAtMs: run.startedAtMs } },
    restartCount: run.restartCount,
    image: run.image,
    imageID: imageId(run.image),
    containerID: containerId(pod, name, run.restartCount),
  };
  if (run.previous) report.lastTerminated = exitReport(pod, name, run.previous);
  return report;
}

/** A regular init container: completed when the pod started. */
function completedInit(pod: Pod, c: Container, podStartMs: number): ContainerReport {
  const image = c.image ?? "";
  return {
    state: {
      terminated: { exitCode: 0, startedAtMs: podStartMs, finishedAtMs: podStartMs },
    },
    image,
    imageID: imageId(image),
    containerID: containerId(pod, c.name, 0),
  };
}

/** The pod's current status, built by the kit from the runs. */
export function currentStatus(pod: Pod, inputs: StatusInputs): PodStatus {
  const { runs } = inputs;
  const report = (c: Container) => {
    const run = runs.get(c.name);
    return run ? [[c.name, runReport(pod, c.name, run)] as const] : [];
  };
  const init = (pod.spec?.initContainers ?? []).flatMap((c) =>
    isSidecar(c) ? report(c) : [[c.name, completedInit(pod, c, inputs.podStartMs)] as const]
  );
  return buildPodStatus(pod, {
    containers: Object.fromEntries((pod.spec?.containers ?? []).flatMap(report)),
    initContainers: Object.fromEntries(init),
    // Ephemeral containers the mock was asked to run (kubectl debug).
    ephemeralContainers: Object.fromEntries(
      (pod.spec?.ephemeralContainers ?? []).flatMap((c) => report(c as Container)),
    ),
    nowMs: inputs.nowMs,
    startTimeMs: inputs.podStartMs,
    podIP: inputs.podIp,
    hostIP: inputs.hostIp,
  });
}
