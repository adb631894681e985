/**
 * What a remote backend supplies to the kit's {@link RemotePods} (./remote_pods.ts): list what
 * exists, read runs (one at a time, many in one call, or both), make, remove, logs — and, where
 * the backend has them, a handle of its own per run, ends it knows better, events. Everything past
 * those five is optional; a backend that leaves it out gets the kit's default.
 * @module
 */
import type { Pod, PodCondition } from "kubernetes-types/core/v1.d.ts";
import type { ContainerLogOptions, PodNetworkAttachment } from "./contract.ts";
import type { ContainerReport, TerminatedReport } from "./pod_status.ts";

/** What a backend says of one pod's run. */
export interface RemoteRun<H = unknown> {
  /** The pod it runs: namespace, name and uid at least (from the backend's tags or labels). */
  pod: Pod;
  /**
   * Each container by name (what it does now; restarts, last end and readiness where the backend
   * keeps them); one missing is not created yet.
   */
  containers: Record<string, ContainerReport>;
  /**
   * Each init container by name, where the backend reports them: then the kit reports them as
   * it reports `containers` (restarts of the runs before added, the back-off's waiting).
   * Default: none reported (the status builder's waiting, PodInitializing).
   */
  initContainers?: Record<string, ContainerReport>;
  /** The pod's IP, once it has one. */
  podIP?: string;
  /** Conditions of the backend's own (types of its own), shown on the pod as they are. */
  conditions?: PodCondition[];
  /**
   * The backend's own reference to this run (a task ARN, a job id, the last answer it gave):
   * kept with the pod's record and handed back to read, remove, logs and the hooks.
   */
  handle?: H;
  /**
   * How many times the kit had restarted the pod before this run, as the backend keeps it (the
   * `restarts` given to {@link RemoteBackend.make}, in a tag): adoption takes it over, so a
   * restarted vkubelet goes on counting, and of two runs of one pod keeps the later.
   */
  restarts?: number;
  /** When the run was created (clock ms): an adopted pod's start time. Default: adoption. */
  createdAtMs?: number;
  /** The run's sandbox (network) is ready for containers; default the status builder's (true). */
  sandboxReady?: boolean;
  /**
   * Every container has ended but the run has not yet (a batch job's script still winding down,
   * its end state not yet known): the restart policy decides once the run has ended, on its
   * final ends. Default false: the run ends with its last container.
   */
  ending?: boolean;
  /**
   * The run's end ends the pod whatever its restart policy, with this pod-level reason and
   * message — as the kubelet fails a pod past its activeDeadlineSeconds with reason
   * DeadlineExceeded and never restarts it (kubernetes/kubernetes pkg/kubelet/active_deadline.go).
   * Default: the restart policy decides.
   */
  failsPod?: { reason: string; message: string };
}

/** What {@link RemoteBackend.make} is told of the run to make. */
export interface RemoteMakeOptions {
  /**
   * How many restarts came before this run (0 for the first): tag the run with it (adoption
   * reads it back as {@link RemoteRun.restarts}) and make it part of an idempotency token with
   * the pod's uid, so that a retried make of the same run makes one.
   */
  restarts: number;
  /**
   * The pod's attachment to the node's pod network, when the node has one (ProviderDeps
   * `podNetwork`): start its `agentCommand` beside the containers, sharing their network.
   */
  network?: PodNetworkAttachment;
}

/** One pod's run to read in a batch: the pod, and its run as last read (with its handle). */
export interface RemoteRead<H = unknown> {
  /** The pod, as vkubelet has it. */
  pod: Pod;
  /** Its run as last read, with the handle; absent before the first read. */
  run?: RemoteRun<H>;
}

/** The runs {@link RemoteBackend.logs} may read from. */
export interface RemoteLogRuns<H = unknown> {
  /** The pod's run now; between runs (restart back-off) undefined. */
  current?: RemoteRun<H>;
  /** The run before, once the pod was restarted (for `kubectl logs --previous`). */
  previous?: RemoteRun<H>;
}

/** What a remote backend supplies; every call takes the signal of the call or loop behind it. */
export interface RemoteBackend<H = unknown> {
  /** The runs this node made that still exist (adopted on start). */
  list(signal: AbortSignal): Promise<RemoteRun<H>[]>;
  /**
   * The pod's run now (`last`: as last read); undefined once the backend no longer has it.
   * A backend with {@link readMany} may leave it out: one pod is then read as a batch of one.
   */
  read?(pod: Pod, signal?: AbortSignal, last?: RemoteRun<H>): Promise<RemoteRun<H> | undefined>;
  /**
   * Many pods' runs in one call, in the order asked (a backend with a batched API, as ECS
   * DescribeTasks); used instead of {@link read} by the poll when present. A failure says
   * nothing of any of them.
   */
  readMany?(reads: RemoteRead<H>[], signal: AbortSignal): Promise<(RemoteRun<H> | undefined)[]>;
  /**
   * Starts a run of the pod (its containers together); the run made, when the backend answers
   * with it (then it is not read again at once).
   */
  make(
    pod: Pod,
    signal?: AbortSignal,
    options?: RemoteMakeOptions,
  ): Promise<void | RemoteRun<H>>;
  /**
   * Stops and removes the pod's run (`run`, as last read; undefined between runs) and whatever
   * the backend holds for the pod; resolves when there is none. It may answer with how the
   * containers ended, by name, where it knows better than "stopped by the deletion".
   */
  remove(
    pod: Pod,
    signal?: AbortSignal,
    run?: RemoteRun<H>,
  ): Promise<void | Record<string, TerminatedReport>>;
  /**
   * Told of a deletion of a pod the kit does not hold (after adoption): a backend that cannot
   * list its runs may still run it for an earlier vkubelet. Default: nothing to do.
   */
  removeUnknown?(pod: Pod, signal?: AbortSignal): Promise<void>;
  /**
   * Lets go of one run that ended (before the next is made) or of a second run of a pod found
   * on adoption, keeping what the pod's next run needs. Default {@link remove}.
   */
  discard?(pod: Pod, run: RemoteRun<H>, signal: AbortSignal): Promise<void>;
  /** Told when a run ended, and whether the pod's policy restarts it (an event, a log line). */
  ended?(pod: Pod, run: RemoteRun<H> | undefined, restart: boolean): void;
  /**
   * Takes the pod as the core hands it over again — for an adopted run, or an update — to keep
   * current what the backend holds for it (values its next run reads).
   */
  update?(pod: Pod, signal?: AbortSignal): Promise<void>;
  /** A container's log; `runs` says which runs the pod has had. */
  logs?(
    pod: Pod,
    container: string,
    options: ContainerLogOptions,
    runs?: RemoteLogRuns<H>,
  ): Promise<ReadableStream<Uint8Array>>;
  /**
   * A container's log as the node's log mirror follows it (./log_mirror.ts), for a backend
   * whose per-container follow (`logs`) costs too much to keep open for every container: one
   * that reads many containers in one call, or polls them under one request budget. The same
   * contract as `logs` (the mirror asks `follow`, `timestamps`, `sinceTime`, `previous`);
   * `kubectl logs` keeps reading `logs`. Default: the mirror follows what `kubectl logs` shows.
   */
  mirrorLogs?(
    pod: Pod,
    container: string,
    options: ContainerLogOptions,
    runs?: RemoteLogRuns<H>,
  ): Promise<ReadableStream<Uint8Array>>;
}
