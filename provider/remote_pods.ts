/**
 * A remote pod's life, owned by the kit: a backend (a cloud API, a batch system, a plugin)
 * supplies only what is its own — list what exists, read a run, make, remove, logs — and
 * {@link RemotePods} answers createPod, updatePod, deletePod, getPod, listPods, notifyPods and
 * getContainerLogs around it: on start it adopts the backend's runs of this node (a restarted
 * vkubelet takes them over instead of making more), every interval it reads each pod's run,
 * restarts a run that ended by the pod's restart policy after the kubelet's crash-loop back-off
 * (./restart.ts; the backend restarts a pod's containers together), and pushes what changed.
 * A deletion does not wait for the backend: deletePod starts the removal and returns, the pod
 * stays in getPod until the backend is done, then its terminal status is pushed and it is
 * forgotten (a removal that fails is tried again from the next poll).
 * What the backend supplies is in ./remote_backend.ts.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { Clock } from "../base/clock.ts";
import type {
  CallOptions,
  ContainerLogOptions,
  ContainerRef,
  PodNetworkAttachment,
  PodNetworkHandle,
} from "./contract.ts";
import { POD_NETWORK_LOST_ERRORS } from "./contract.ts";
import { raceSignal } from "../base/cancel.ts";
import { isNotFound, NotFoundError } from "./errors.ts";
import type { Logger } from "./logger.ts";
import {
  buildPodStatus,
  type ContainerReport,
  type ContainerStateReport,
  terminalPodStatus,
  type TerminatedReport,
} from "./pod_status.ts";
import type { PodEventSink } from "./events.ts";
import { podKeyOf, PodTable } from "./pod_table.ts";
import type { RemoteBackend, RemoteLogRuns, RemoteRun } from "./remote_backend.ts";
import {
  type BackoffEntry,
  type BackoffOptions,
  crashLoopWaiting,
  nextBackoff,
  planRestart,
  podRestartPolicy,
  shouldRestartPod,
} from "./restart.ts";
import { unknownEnd } from "./container_end.ts";
import { LogMirror } from "./log_mirror.ts";
import type { PodLogDir } from "./pod_log_dir.ts";

export type {
  RemoteBackend,
  RemoteLogRuns,
  RemoteMakeOptions,
  RemoteRead,
  RemoteRun,
} from "./remote_backend.ts";

/** What {@link RemotePods} needs. */
export interface RemotePodsOptions<H = unknown> {
  /** What the backend supplies: list, read, make, remove, logs. */
  backend: RemoteBackend<H>;
  /** The clock the poll, start times and restart back-off go by. */
  clock: Clock;
  /** Where failed reads, adoptions and removals are logged. */
  log: Logger;
  /** How often each pod's run is read, in ms. */
  intervalMs: number;
  /** The node's IP, reported as the pods' host IP. */
  hostIP?: string;
  /** The back-off's numbers (default the kubelet's). */
  backoff?: BackoffOptions;
  /**
   * The backend restarts a run's containers by the pod's policy itself (as ACI and ECI do), and
   * reports their restarts: the kit only makes a run again that is gone. Default false: the kit
   * restarts a run whose containers have all ended.
   */
  backendRestarts?: boolean;
  /**
   * Until the backend lists its runs, list again every interval, listPods, createPod and
   * deletions waiting: a run adopted late would be made twice, or left running after its pod is
   * deleted. Default false: a failed list is logged and nothing is adopted.
   */
  retryList?: boolean;
  /**
   * A pod keeps the last IP it was reported with while no run reports one (between runs, once
   * it ended). Default false: the pod's IP is its current run's.
   */
  keepPodIP?: boolean;
  /**
   * While the backend's batched read ({@link RemoteBackend.readMany}) fails, the poll waits
   * twice as long each time, up to 8 intervals, and leaves every pod as it was (as interLink's
   * virtual kubelet paces its status loop). Default false: a failed read is logged and the next
   * poll comes after one interval.
   */
  pollBackoff?: boolean;
  /**
   * Removals the backend works on at once, at most; the rest wait their turn. Default 10, the
   * core's pod sync workers, which bounded them while a deletion held a worker (100 Zun capsule
   * deletions at once ran zun-api out of database connections: 500s).
   */
  maxRemovals?: number;
  /** The node's pod log directory: the containers' logs are mirrored there (./log_mirror.ts). */
  podLogs?: PodLogDir;
  /**
   * Where the mirror reads a container's log: what the provider serves `kubectl logs` from
   * (a provider whose logs are its own, not the backend's); `false`: not mirrored (a backend whose
   * log reads are too dear to follow every container, as ACI's under ARM's read limit). Default
   * the backend's `logs`.
   */
  mirrorLogs?:
    | ((ref: ContainerRef, options: ContainerLogOptions) => Promise<ReadableStream<Uint8Array>>)
    | false;
  /**
   * The node's pod network for remote pods (ProviderDeps `podNetwork`): each pod is attached
   * before its first run is made (the backend gets the attachment in `make`'s options, its
   * runs report its IP) and detached once it is forgotten. A `hostNetwork` pod is not attached:
   * it runs on the backend's host network and reports the backend's address.
   */
  podNetwork?: PodNetworkHandle;
  /** Where the kit's own pod events go (a pod's sandbox made anew); default none. */
  event?: PodEventSink;
}

interface RemoteRecord<H> {
  pod: Pod;
  run?: RemoteRun<H>;
  /** The run before the current one, once the pod was restarted. */
  previous?: RemoteRun<H>;
  restarts: number;
  lastTerminated: Map<string, TerminatedReport>;
  /** When the next run is made (restart back-off), clock ms. */
  restartAtMs?: number;
  /**
   * The back-off being waited before it, for the `CrashLoopBackOff` message; none when the next
   * run waits for a new sandbox, not a back-off (`#sandboxChanged`).
   */
  restartDelayMs?: number;
  backoff?: BackoffEntry;
  /** The containers' final ends once the pod runs no more. */
  finished?: Map<string, TerminatedReport>;
  startTimeMs: number;
  /** The pod is being deleted: it is read and restarted no more. */
  deleting?: boolean;
  /** The backend's removal under way; it settles to the attempt's failure, if any. */
  removal?: Promise<RemovalFailure | undefined>;
  /** The last removal's failure, until the next attempt starts (from deletePod or the poll). */
  removeFailed?: RemovalFailure;
  /** The ended run being let go of: the next run is made once it settles. */
  discarding?: Promise<void>;
  /** The pod's place on the node's pod network (`podNetwork`), kept across its runs. */
  network?: PodNetworkAttachment;
  /** The pod's sandbox changed (its attachment lost): its next run is attached anew first. */
  attachAnew?: boolean;
  /**
   * The adopted pod's reattach failed for a reason that may pass: its run is kept and the
   * reattach tried again at the first poll from then (clock ms).
   */
  reattachAtMs?: number;
  /**
   * The back-off of the pod's failed reattaches, new attachments or restarts (the restart
   * back-off's doubling).
   */
  retryBackoff?: BackoffEntry;
  /**
   * Why the last try at the pod's next run failed, shown as the kubelet shows a container that
   * could not be created until the next try succeeds.
   */
  makeFailed?: string;
  /** The pod's IPs as the cluster had them when handed over, reported while reattaching. */
  heldIPs?: { podIP: string; podIPs: string[] };
}

interface RemovalFailure {
  err: unknown;
}

/**
 * The pods of a remote backend, their life owned by the kit; see the module doc.
 *
 * @example A backend of runs kept in a map: the poll reads a run that ended and ends its pod
 * ```ts
 * import {
 *   type Logger,
 *   type RemoteBackend,
 *   RemotePods,
 *   type RemoteRun,
 * } from "@vkubelet/vkubelet/provider";
 * import { FakeClock } from "@vkubelet/vkubelet/provider/testing";
 * import assert from "node:assert/strict";
 *
 * const clock = new FakeClock();
 * const runs = new Map<string, RemoteRun>(); // by pod uid, as a cloud API would keep them
 * const backend: RemoteBackend = {
 *   list: () => Promise.resolve([...runs.values()]),
 *   read: (pod) => Promise.resolve(runs.get(pod.metadata!.uid!)),
 *   make(pod) {
 *     const state = { running: { startedAtMs: clock.now() } };
 *     runs.set(pod.metadata!.uid!, { pod, containers: { app: { state } }, podIP: "127.0.0.2" });
 *     return Promise.resolve();
 *   },
 *   remove: (pod) => Promise.resolve(void runs.delete(pod.metadata!.uid!)),
 * };
 * const log: Logger = { debug() {}, info() {}, warn() {}, warning() {}, error() {} };
 * const pods = new RemotePods({ backend, clock, log, intervalMs: 1_000 });
 *
 * await pods.createPod({
 *   metadata: { namespace: "default", name: "job", uid: "uid-1" },
 *   spec: { restartPolicy: "Never", containers: [{ name: "app", image: "busybox" }] },
 * }, {});
 * assert.equal((await pods.getPod("default", "job"))?.status?.phase, "Running");
 *
 * // The backend's container exits 0; one poll reads it, and under Never the pod is done.
 * const ended = { terminated: { exitCode: 0, finishedAtMs: clock.now() } };
 * runs.set("uid-1", { ...runs.get("uid-1")!, containers: { app: { state: ended } } });
 * await pods.poll(new AbortController().signal);
 * const status = (await pods.getPod("default", "job"))?.status;
 * assert.equal(status?.phase, "Succeeded");
 * assert.equal(status?.containerStatuses?.[0].state?.terminated?.reason, "Completed");
 * ```
 */
export class RemotePods<H = unknown> {
  readonly #o: RemotePodsOptions<H>;
  /** Removals the backend works on now, and those waiting for one of them to end. */
  #removing = 0;
  readonly #removalTurns: (() => void)[] = [];
  readonly #table: PodTable<RemoteRecord<H>>;
  /** {@link run}'s signal: what a removal in the background stops with. */
  #lifetime?: AbortSignal;
  readonly #removals = new Set<Promise<unknown>>();
  readonly #mirror?: LogMirror;

  /** No pods yet; {@link run} adopts the backend's. */
  constructor(options: RemotePodsOptions<H>) {
    if (!options.backend.read && !options.backend.readMany) {
      throw new TypeError("a RemoteBackend supplies read, readMany or both");
    }
    this.#o = options;
    this.#table = new PodTable({
      statusOf: (record, terminal) => this.#statusOf(record, terminal),
      log: options.log,
    });
    const { podLogs: dir, clock, log } = options;
    // A backend's own way for the mirror (batched, budgeted) wins unless the mirror is off.
    const viaBackend = options.mirrorLogs !== false && options.backend.mirrorLogs
      ? (ref: ContainerRef, o: ContainerLogOptions) => this.#mirrorLogs(ref, o)
      : undefined;
    const mirrorable = viaBackend ?? options.mirrorLogs ??
      (options.backend.logs && this.getContainerLogs);
    if (dir && mirrorable && dir.options.maxStreams !== 0) {
      const logs = viaBackend || options.mirrorLogs ||
        ((ref: ContainerRef, o: ContainerLogOptions) => this.getContainerLogs(ref, o));
      this.#mirror = new LogMirror({ dir, logs, clock, log });
      this.#table.subscribe((pod) => this.#mirror?.observe(pod));
    }
  }

  /** Adopts the backend's runs of this node, then reads them every interval until `signal` ends. */
  async run(signal: AbortSignal): Promise<void> {
    this.#lifetime = signal;
    try {
      await this.#adoptAndPoll(signal);
    } finally {
      // The removals stop with the signal too; a pod left on the backend is adopted next time.
      await Promise.all([...this.#removals, this.#mirror?.close()]);
    }
  }

  async #adoptAndPoll(signal: AbortSignal): Promise<void> {
    let adopted!: () => void;
    this.#table.holdUntil(new Promise<void>((resolve) => adopted = resolve));
    try {
      await this.#adoptAll(signal);
    } finally {
      adopted();
    }
    let failures = 0;
    const waitMs = () =>
      this.#o.intervalMs * (this.#o.pollBackoff ? 2 ** Math.min(failures, 3) : 1);
    while (!signal.aborted) {
      await this.poll(signal).then(() => {
        if (failures > 0) this.#o.log.info("status poll answers again", {});
        failures = 0;
      }, (err) => {
        if (signal.aborted) return;
        failures++;
        this.#o.log.warning("status poll failed ({n} in a row), next in {next} ms: {err}", {
          n: failures,
          next: waitMs(),
          err,
        });
      });
      await this.#o.clock.sleep(waitMs(), signal).catch(() => {});
    }
  }

  /** One round: read every pod's run, apply restart policies, make due runs, push changes. */
  async poll(signal: AbortSignal): Promise<void> {
    const records = this.#table.records;
    for (const record of records.values()) {
      if (record.removeFailed && !record.removal) void this.#startRemoval(record);
    }
    const reads = await this.#readAll(
      [...records.values()].filter((r) =>
        !r.finished && !r.deleting && r.restartAtMs === undefined
      ),
      signal,
    );
    for (const record of [...records.values()]) {
      if (record.finished || record.deleting) continue;
      const read = reads.get(record);
      // A backend that does not answer says nothing of the run; a pod deleted meanwhile is gone.
      if (read && records.get(podKeyOf(record.pod)) === record && !record.deleting) {
        const before = record.run;
        record.run = read.run;
        this.#ended(record, before, signal);
      }
      if (record.reattachAtMs !== undefined && record.reattachAtMs <= this.#o.clock.now()) {
        await this.#reattach(record, signal);
      }
      // The next run waits for the pod's kept attachment (or its loss, and a new sandbox).
      if (
        record.restartAtMs !== undefined && record.restartAtMs <= this.#o.clock.now() &&
        record.reattachAtMs === undefined
      ) {
        await record.discarding;
        record.discarding = undefined;
        const restarts = record.restarts + 1;
        await this.#attachAnew(record).then(() => {
          const network = record.network ? { network: record.network } : {};
          return this.#o.backend.make(record.pod, signal, { restarts, ...network });
        }).then(
          (made) => {
            record.restarts = restarts;
            record.restartAtMs = record.retryBackoff = record.makeFailed = undefined;
            if (made) record.run = made;
          },
          (err) => {
            // Tried again after a doubling back-off, not at every poll: the kubelet's next
            // try at a container that failed to start waits out its restart back-off, doubled
            // at each try (pkg/kubelet/kuberuntime/kuberuntime_manager.go doBackOff).
            const pod = podKeyOf(record.pod);
            const next = this.#retryMs(record);
            record.restartAtMs = this.#o.clock.now() + next;
            if (record.attachAnew) {
              return this.#o.log.warning(
                "cannot attach {pod} to the pod network for its new sandbox, again in {next} ms: {err}",
                { pod, next, err },
              );
            }
            record.makeFailed = (err as Error)?.message ?? String(err);
            this.#o.log.warning("cannot restart {pod}, again in {next} ms: {err}", {
              pod,
              next,
              err,
            });
          },
        );
      }
      this.#table.notify(record);
    }
  }

  /** `Provider.createPod`: makes the pod's run, unless the backend already has it (adopted). */
  async createPod(pod: Pod, options: CallOptions): Promise<void> {
    const known = await this.#table.ofPod(pod, options.signal);
    if (known) {
      await this.#o.backend.update?.(pod, options.signal);
      if (known.reattachAtMs !== undefined && pod.status?.podIP) {
        const podIPs = (pod.status.podIPs ?? []).flatMap((p) => p.ip ? [p.ip] : []);
        known.heldIPs = {
          podIP: pod.status.podIP,
          podIPs: podIPs.length ? podIPs : [pod.status.podIP],
        };
      }
      known.pod = { ...structuredClone(pod), status: known.pod.status };
    } else {
      const old = this.#table.get(pod.metadata?.namespace, pod.metadata?.name);
      if (old) { // an older pod of the same name: its run goes first
        const failed = await raceSignal(this.#startRemoval(old), options.signal);
        if (failed) throw failed.err;
      }
      // A host-network pod runs on the backend's host network: it gets no IP here.
      const network = pod.spec?.hostNetwork ? undefined : await this.#o.podNetwork?.attach(pod);
      const made = await this.#o.backend
        .make(pod, options.signal, { restarts: 0, ...(network ? { network } : {}) })
        .catch(async (err) => {
          await this.#o.podNetwork?.detach(pod).catch(() => {});
          throw err;
        });
      const record = this.#record(structuredClone(pod));
      record.network = network;
      record.run = made ? made : await this.#readOne(pod, options.signal);
      this.#table.records.set(podKeyOf(pod), record);
    }
    this.#table.notify(this.#table.records.get(podKeyOf(pod))!);
  }

  /** `Provider.updatePod`: a run cannot change; labels and annotations are taken over. */
  async updatePod(pod: Pod, options: CallOptions): Promise<void> {
    const record = this.#table.get(pod.metadata?.namespace, pod.metadata?.name);
    if (record?.pod.metadata?.uid === pod.metadata?.uid && record) {
      await this.#o.backend.update?.(pod, options.signal);
      record.pod = { ...structuredClone(pod), status: record.pod.status };
      this.#table.notify(record);
    }
  }

  /**
   * `Provider.deletePod`: starts removing the run and returns; once the backend is done the
   * terminal status is pushed and the pod forgotten (until then getPod still reports it). A
   * removal already under way is not started again; when the last one failed, another starts
   * and its error is thrown.
   */
  async deletePod(pod: Pod, options: CallOptions): Promise<void> {
    const record = await this.#table.ofPod(pod, options.signal);
    if (!record) return await this.#o.backend.removeUnknown?.(pod, options.signal);
    const failed = record.removal ? undefined : record.removeFailed;
    void this.#startRemoval(record);
    if (failed) throw failed.err;
  }

  /** `Provider.getPod`. */
  getPod(namespace: string, name: string, _options?: CallOptions): Promise<Pod | undefined> {
    return this.#table.getPod(namespace, name);
  }

  /** `Provider.listPods`: once the backend's runs are adopted. */
  listPods(options: CallOptions): Promise<Pod[]> {
    return this.#table.listPods(options.signal);
  }

  /** `Provider.notifyPods`; the function returned unsubscribes. */
  notifyPods(callback: (pod: Pod) => void): () => void {
    return this.#table.subscribe(callback);
  }

  /** `Provider.getContainerLogs`, from the backend's logs. */
  async getContainerLogs(
    ref: ContainerRef,
    options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    this.knownPod(ref.namespace, ref.pod, ref.container);
    const record = this.#table.get(ref.namespace, ref.pod)!;
    if (!this.#o.backend.logs) throw new NotFoundError("this backend keeps no logs");
    const runs = this.logRunsOf(ref.namespace, ref.pod);
    return await this.#o.backend.logs(record.pod, ref.container, options, runs);
  }

  /** The backend's `mirrorLogs` for the mirror, with the pod's runs as `logs` gets them. */
  async #mirrorLogs(
    ref: ContainerRef,
    options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    const pod = this.knownPod(ref.namespace, ref.pod, ref.container);
    const runs = this.logRunsOf(ref.namespace, ref.pod);
    return await this.#o.backend.mirrorLogs!(pod, ref.container, options, runs);
  }

  /**
   * The pod `namespace/name` (and its `container`) on this node, or a {@link NotFoundError}
   * naming what is missing: the check before exec, attach or port-forward is refused.
   */
  knownPod(namespace: string, name: string, container?: string): Pod {
    const record = this.#table.get(namespace, name);
    if (!record) throw new NotFoundError(`pod ${namespace}/${name} is not on this node`);
    const names = (record.pod.spec?.containers ?? []).map((c) => c.name);
    if (container !== undefined && !names.includes(container)) {
      throw new NotFoundError(`pod ${namespace}/${name} has no container ${container}`);
    }
    return record.pod;
  }

  /**
   * The run of the pod `namespace/name` now, as last read (undefined between runs, once it
   * ended, or for a pod not on this node): what exec or a metric call is addressed to.
   */
  runOf(namespace: string, name: string): RemoteRun<H> | undefined {
    const record = this.#table.get(namespace, name);
    return record?.finished || record?.deleting ? undefined : record?.run;
  }

  /**
   * The runs of the pod `namespace/name` a log may be read from (as {@link getContainerLogs}
   * hands them to the backend), for a provider that checks the container itself (an init
   * container's log); empty for a pod not on this node.
   */
  logRunsOf(namespace: string, name: string): RemoteLogRuns<H> {
    const record = this.#table.get(namespace, name);
    return { current: record?.run, previous: record?.previous };
  }

  /** The pods that have a run now, each with it and when the pod started (clock ms). */
  running(): { pod: Pod; run: RemoteRun<H>; startTimeMs: number }[] {
    return [...this.#table.records.values()].flatMap((r) =>
      r.run && !r.finished && !r.deleting
        ? [{ pod: r.pod, run: r.run, startTimeMs: r.startTimeMs }]
        : []
    );
  }

  #record(pod: Pod): RemoteRecord<H> {
    return { pod, restarts: 0, lastTerminated: new Map(), startTimeMs: this.#o.clock.now() };
  }

  /** Lists the backend's runs and adopts them; again every interval if told to. */
  async #adoptAll(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        for (const run of await this.#o.backend.list(signal)) await this.#adopt(run, signal);
        // Only after a list that answered: the pod network lets go of pods gone meanwhile.
        const pods = [...this.#table.records.values()].map((r) => r.pod);
        await this.#o.podNetwork?.adopted?.(pods).catch((err) => {
          this.#o.log.warning("cannot detach gone pods from the pod network: {err}", { err });
        });
        return;
      } catch (err) {
        if (signal.aborted) return;
        this.#o.log.warning("cannot list the backend's pods: {err}", { err });
        if (!this.#o.retryList) return;
        await this.#o.clock.sleep(this.#o.intervalMs, signal).catch(() => {});
      }
    }
  }

  /** Takes over a run; of two runs of one pod the later (more restarts before it) is kept. */
  async #adopt(run: RemoteRun<H>, signal: AbortSignal): Promise<void> {
    const k = podKeyOf(run.pod);
    const existing = this.#table.records.get(k);
    if (existing?.run) {
      const keepNew = (run.restarts ?? 0) > existing.restarts;
      const duplicate = keepNew ? existing.run : run;
      this.#o.log.warning("{pod}: letting go of a second run of the pod", { pod: k });
      await this.#discard(duplicate.pod, duplicate, signal);
      if (!keepNew) return;
    }
    const record = this.#record(structuredClone(run.pod));
    record.run = run;
    record.restarts = run.restarts ?? 0;
    record.startTimeMs = run.createdAtMs ?? record.startTimeMs;
    // Attached before the restart: the same IP, and its agent's credential accepted again.
    if (existing?.network) record.network = existing.network;
    else await this.#reattach(record, signal);
    this.#table.records.set(k, record);
    this.#o.log.info("adopted {pod}", { pod: k });
  }

  /**
   * The adopted pod's attachment from before the restart, as `record.network`. One that cannot
   * be had again (an error named in `POD_NETWORK_LOST_ERRORS`: its namespace lost and its IP
   * taken meanwhile, its kept state unreadable; or nothing kept any more after a failed try)
   * means the pod's sandbox changed: its kept attachment is let go of and {@link sandboxChanged}
   * decides. Any other failure may pass (a relay slow to start, a full disk): the run is kept,
   * the reattach is tried again after the restart back-off's doubling, and meanwhile the pod
   * reports the IPs the cluster has for it (`heldIPs`; never the backend's own address).
   */
  async #reattach(record: RemoteRecord<H>, signal: AbortSignal): Promise<void> {
    const { podNetwork, log } = this.#o;
    if (!podNetwork?.reattach || record.pod.spec?.hostNetwork) return;
    const pod = podKeyOf(record.pod);
    const retried = record.reattachAtMs !== undefined;
    let lost: unknown;
    try {
      record.network = await podNetwork.reattach(record.pod);
      // Kept before the failed try, gone now (let go of by the network): lost.
      if (retried && !record.network) lost = new Error("its kept attachment is gone");
    } catch (err) {
      if (!isPodNetworkLost(err)) {
        const next = this.#retryMs(record);
        record.reattachAtMs = this.#o.clock.now() + next;
        log.warning("cannot reattach {pod} to the pod network yet, again in {next} ms: {err}", {
          pod,
          next,
          err,
        });
        return;
      }
      lost = err;
    }
    if (lost === undefined) {
      if (retried) log.info("{pod} is reattached to the pod network", { pod });
      record.reattachAtMs = record.retryBackoff = record.heldIPs = undefined;
      return;
    }
    log.warning("cannot reattach {pod} to the pod network: {err}", { pod, err: lost });
    record.reattachAtMs = record.retryBackoff = record.heldIPs = undefined;
    await podNetwork.detach(record.pod).catch((err) => {
      log.warning("cannot detach {pod} from the pod network: {err}", { pod, err });
    });
    // Between runs (one ended while retrying) only the next run needs the new sandbox.
    if (record.run) await this.#sandboxChanged(record, lost, signal);
    else record.attachAnew = true;
  }

  /** The wait before the next try at the record's attachment or run: the restart back-off's doubling. */
  #retryMs(record: RemoteRecord<H>): number {
    const now = this.#o.clock.now();
    record.retryBackoff = nextBackoff(record.retryBackoff, now, now, this.#o.backoff);
    return record.retryBackoff.delayMs;
  }

  /**
   * The kubelet's answer to a sandbox that must be made anew (kubernetes/kubernetes
   * pkg/kubelet/kuberuntime/kuberuntime_manager.go computePodActions, SyncPod): the pod's
   * containers are killed and started again in a new sandbox, their restarts counted, with a
   * `SandboxChanged` event; but a pod that would not restart them (restartPolicy Never once a
   * container was created, OnFailure once all succeeded) is only killed and ends. Here the run
   * is let go of (the backend's discard) and, to restart, the next run is made at the next poll
   * on a new attachment (a new IP, and a new credential its agent starts with), no back-off.
   */
  async #sandboxChanged(record: RemoteRecord<H>, err: unknown, signal: AbortSignal) {
    const run = record.run!;
    const now = this.#o.clock.now();
    const why = `its pod network attachment could not be restored (${(err as Error)?.message})`;
    const { ends, created } = killedEnds(record.pod, run, now, why);
    const names = (record.pod.spec?.containers ?? []).map((c) => c.name);
    const policy = podRestartPolicy(record.pod);
    const restart = !run.failsPod && (!created || policy === "Always" ||
      (policy === "OnFailure" && names.some((n) => ends.get(n)?.exitCode !== 0)));
    await this.#discard(record.pod, run, signal); // killed, not ended: `ended` is not told
    if (!restart) {
      this.#o.event?.(
        record.pod,
        "Warning",
        "SandboxChanged",
        `Pod sandbox changed; restartPolicy ${policy} starts no container again, so the ` +
          `pod is killed: ${why}`,
      );
      for (const n of names) {
        if (!ends.has(n)) {
          ends.set(n, { exitCode: 137, message: `Killed: ${why}`, finishedAtMs: now });
        }
      }
      record.finished = ends;
      // Killed: its address (the backend's own, unreachable from the cluster) is not reported.
      record.previous = run;
      record.run = undefined;
      return;
    }
    this.#o.event?.(
      record.pod,
      "Normal",
      "SandboxChanged",
      `Pod sandbox changed, it will be killed and re-created: ${why}`,
    );
    record.restarts += Math.max(0, ...names.map((n) => run.containers[n]?.restartCount ?? 0));
    record.lastTerminated = ends;
    record.previous = run;
    record.run = undefined;
    record.attachAnew = true;
    record.restartAtMs = now;
    record.restartDelayMs = undefined;
  }

  /** A new attachment for the record's next run, when its sandbox changed. */
  async #attachAnew(record: RemoteRecord<H>): Promise<void> {
    if (!record.attachAnew || !this.#o.podNetwork) return;
    record.network = await this.#o.podNetwork.attach(record.pod);
    record.attachAnew = record.retryBackoff = undefined;
  }

  /** The backend's discard (default remove) of one run; a failure is logged. */
  async #discard(pod: Pod, run: RemoteRun<H>, signal: AbortSignal): Promise<void> {
    const { backend } = this.#o;
    await (backend.discard ? backend.discard(pod, run, signal) : backend.remove(pod, signal, run))
      .catch((err) => {
        this.#o.log.warning("cannot remove a run of {pod}: {err}", { pod: podKeyOf(pod), err });
      });
  }

  /** One pod's run: the backend's `read`, or its batched read of one. */
  async #readOne(pod: Pod, signal?: AbortSignal, last?: RemoteRun<H>) {
    const { backend } = this.#o;
    if (backend.read) return await backend.read(pod, signal, last);
    const [run] = await backend.readMany!(
      [{ pod, run: last }],
      signal ?? new AbortController().signal,
    );
    return run;
  }

  /** Each record's run now, by record; a record the backend did not answer for is left out. */
  async #readAll(
    records: RemoteRecord<H>[],
    signal: AbortSignal,
  ): Promise<Map<RemoteRecord<H>, { run?: RemoteRun<H> }>> {
    const { backend, log } = this.#o;
    const reads = new Map<RemoteRecord<H>, { run?: RemoteRun<H> }>();
    if (backend.readMany && records.length) {
      const asked = backend.readMany(records.map((r) => ({ pod: r.pod, run: r.run })), signal);
      // With pollBackoff the failure fails the poll, which backs off.
      const runs = this.#o.pollBackoff ? await asked : await asked
        .catch((err) => void log.warning("cannot read the backend's pods: {err}", { err }));
      records.forEach((record, i) => runs && reads.set(record, { run: runs[i] }));
      return reads;
    }
    for (const record of records) {
      await backend.read!(record.pod, signal, record.run).then(
        (run) => void reads.set(record, { run }),
        (err) => void log.warning("cannot read {pod}: {err}", { pod: podKeyOf(record.pod), err }),
      );
    }
    return reads;
  }

  /**
   * A run that ended (every container terminated) or is gone while the pod lives (`before`, as
   * last read): the restart policy decides.
   */
  #ended(record: RemoteRecord<H>, before: RemoteRun<H> | undefined, signal: AbortSignal): void {
    const now = this.#o.clock.now();
    const names = (record.pod.spec?.containers ?? []).map((c) => c.name);
    const run = record.run;
    const gone = run === undefined;
    if (
      run && (this.#o.backendRestarts || run.ending || names.some((n) => !terminatedOf(run, n)))
    ) {
      return;
    }
    const ends = new Map(names.map((name): [string, TerminatedReport] => [
      name,
      terminatedOf(run ?? before, name) ?? unknownEnd("lost", { nowMs: now }),
    ]));
    const restart = !(run ?? before)?.failsPod &&
      shouldRestartPod(record.pod, [...ends.values()].map((e) => e.exitCode));
    this.#o.backend.ended?.(record.pod, run ?? before, restart);
    if (!restart) {
      record.finished = ends;
      return;
    }
    record.lastTerminated = ends;
    record.restarts += Math.max(0, ...names.map((n) => before?.containers[n]?.restartCount ?? 0));
    record.previous = run ?? before;
    record.run = undefined;
    ({ atMs: record.restartAtMs, entry: record.backoff } = planRestart(
      record.backoff,
      now,
      this.#o.backoff,
    ));
    record.restartDelayMs = record.restartAtMs - now;
    // The ended run goes before the next is made (a backend may allow one run per pod).
    if (!gone) record.discarding = this.#discard(record.pod, run, signal);
  }

  /**
   * Removes the record's run in the background (with {@link run}'s signal: the removal outlives
   * the call that asked for it), unless that is under way; settles to the failure, if any.
   */
  #startRemoval(record: RemoteRecord<H>): Promise<RemovalFailure | undefined> {
    // Once a deletion starts the pod runs no more, even if the backend fails to remove it now.
    record.deleting = true;
    if (record.removal) return record.removal;
    record.removeFailed = undefined;
    const signal = this.#lifetime;
    const removal = this.#remove(record, signal).then(() => undefined, (err) => {
      if (!signal?.aborted) {
        this.#o.log.warning("cannot remove {pod} yet, again at the next poll: {err}", {
          pod: podKeyOf(record.pod),
          err,
        });
      }
      return { err };
    }).then((failed) => {
      record.removal = undefined;
      record.removeFailed = failed;
      this.#removals.delete(removal);
      return failed;
    });
    record.removal = removal;
    this.#removals.add(removal);
    return removal;
  }

  /** The backend's removal of the run; then the terminal status is pushed, the pod forgotten. */
  async #remove(record: RemoteRecord<H>, signal?: AbortSignal): Promise<void> {
    await this.#removalTurn();
    // A run the backend no longer has is removed.
    const ends = await this.#o.backend.remove(record.pod, signal, record.run).catch((err) => {
      if (isNotFound(err)) return undefined;
      throw err;
    }).finally(() => this.#endRemovalTurn());
    const now = this.#o.clock.now();
    if (ends) {
      const between = record.run === undefined;
      record.finished ??= new Map((record.pod.spec?.containers ?? []).map((c) => [
        c.name,
        ends[c.name] ?? (between ? record.lastTerminated.get(c.name) : undefined) ??
          unknownEnd("deleted", { nowMs: now }),
      ]));
    }
    const status = terminalPodStatus(record.pod, this.#statusOf(record, false), { nowMs: now });
    this.#table.send({ apiVersion: "v1", kind: "Pod", ...record.pod, status });
    this.#table.forget(record);
    await this.#mirror?.forget(record.pod).catch(() => {});
    if (record.network || record.reattachAtMs !== undefined) {
      await this.#o.podNetwork?.detach(record.pod).catch((err) => {
        this.#o.log.warning("cannot detach {pod} from the pod network: {err}", {
          pod: podKeyOf(record.pod),
          err,
        });
      });
    }
  }

  /** Waits until fewer than `maxRemovals` removals are under way, and counts this one. */
  async #removalTurn(): Promise<void> {
    if (this.#removing < (this.#o.maxRemovals ?? 10)) this.#removing++;
    // The ending removal hands its turn over (the count stays).
    else await new Promise<void>((resolve) => this.#removalTurns.push(resolve));
  }

  #endRemovalTurn(): void {
    const next = this.#removalTurns.shift();
    if (next) next();
    else this.#removing--;
  }

  #statusOf(record: RemoteRecord<H>, terminal: boolean) {
    const now = this.#o.clock.now();
    const spec = record.pod.spec;
    const containers = this.#reportsOf(record, spec?.containers, record.run?.containers);
    // Init containers as the containers, once the backend reports them at all.
    const inits = (record.run ?? record.previous)?.initContainers !== undefined
      ? this.#reportsOf(record, spec?.initContainers, record.run?.initContainers)
      : undefined;
    const keptIP = this.#o.keepPodIP ? record.pod.status?.podIP : undefined;
    // While its reattach is retried the pod keeps the IPs the cluster has for it (its attachment's,
    // still kept), never the backend's own (unreachable from the cluster).
    const reattaching = record.reattachAtMs !== undefined;
    const fails = record.finished ? (record.run ?? record.previous)?.failsPod : undefined;
    return buildPodStatus(record.pod, {
      containers,
      initContainers: inits,
      nowMs: now,
      startTimeMs: record.startTimeMs,
      // An attached pod's IP is the node's; the backend's own is not reachable from the cluster.
      podIP: record.network?.podIP ??
        (reattaching ? record.heldIPs?.podIP : record.run?.podIP ?? keptIP),
      podIPs: record.network?.podIPs ?? (reattaching ? record.heldIPs?.podIPs : undefined),
      hostIP: this.#o.hostIP,
      sandboxReady: record.run?.sandboxReady,
      extraConditions: record.run?.conditions,
      terminal: terminal || record.finished !== undefined,
      reason: fails?.reason,
      message: fails?.message,
    });
  }

  /** The named containers' reports: the run's, with the kit's state, restarts and last end. */
  #reportsOf(
    record: RemoteRecord<H>,
    specs: { name: string }[] | undefined,
    reported: Record<string, ContainerReport> | undefined,
  ): Record<string, ContainerReport> {
    const out: Record<string, ContainerReport> = {};
    for (const { name } of specs ?? []) {
      const report = reported?.[name];
      const lastTerminated = report?.lastTerminated ?? record.lastTerminated.get(name);
      out[name] = {
        ...report,
        state: this.#stateOf(record, name, report),
        // Restarts of the runs before this one, and the backend's own within it.
        restartCount: record.restarts + (report?.restartCount ?? 0),
        ...(lastTerminated ? { lastTerminated } : {}),
      };
    }
    return out;
  }

  #stateOf(
    record: RemoteRecord<H>,
    name: string,
    report: ContainerReport | undefined,
  ): ContainerStateReport {
    const finished = record.finished?.get(name);
    if (finished) return { terminated: finished };
    if (record.restartAtMs !== undefined && record.makeFailed !== undefined) {
      // As the kubelet shows a container whose start failed until its next try
      // (pkg/kubelet/kubelet_pods.go convertToAPIContainerStatuses, from the sync's results).
      return { waiting: { reason: "CreateContainerError", message: record.makeFailed } };
    }
    if (record.restartAtMs !== undefined && record.restartDelayMs === undefined) {
      // Waiting for a new sandbox, in no back-off: as the kubelet shows a container that has no
      // status in the pod's sandbox yet (kubernetes/kubernetes pkg/kubelet/kubelet_pods.go
      // convertToAPIContainerStatuses, its defaultWaitingState).
      const init = record.pod.spec?.initContainers?.length;
      return { waiting: { reason: init ? "PodInitializing" : "ContainerCreating" } };
    }
    if (record.restartAtMs !== undefined) {
      return { waiting: crashLoopWaiting(record.pod, name, record.restartDelayMs ?? 0) };
    }
    return report?.state ?? { waiting: { reason: "ContainerCreating" } };
  }
}

/**
 * The containers' ends once their run is killed (those that ended keep their end), and whether
 * any was created (ran, or ended): what the kubelet's `len(podStatus.ContainerStatuses) != 0`
 * asks. A container that never started has no end.
 */
function killedEnds(
  pod: Pod,
  run: RemoteRun,
  nowMs: number,
  why: string,
): { ends: Map<string, TerminatedReport>; created: boolean } {
  const ends = new Map<string, TerminatedReport>();
  let created = (run.restarts ?? 0) > 0;
  for (const { name } of [...pod.spec?.initContainers ?? [], ...pod.spec?.containers ?? []]) {
    const report = run.containers[name] ?? run.initContainers?.[name];
    const state = report?.state;
    if (report?.restartCount || report?.lastTerminated) created = true;
    if (!state || "waiting" in state) continue;
    created = true;
    if ("terminated" in state) ends.set(name, state.terminated);
    else {
      ends.set(name, {
        exitCode: 137,
        signal: 9,
        message: `Killed: ${why}`,
        startedAtMs: state.running.startedAtMs,
        finishedAtMs: nowMs,
      });
    }
  }
  return { ends, created };
}

function terminatedOf(run: RemoteRun | undefined, name: string): TerminatedReport | undefined {
  const state = run?.containers[name]?.state;
  return state && "terminated" in state ? state.terminated : undefined;
}

/** The pod's attachment cannot be had again (see `POD_NETWORK_LOST_ERRORS`). */
function isPodNetworkLost(err: unknown): boolean {
  return err instanceof Error && POD_NETWORK_LOST_ERRORS.includes(err.name);
}
