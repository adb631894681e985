/**
 * A remote pod's life, owned by the kit: a backend (a cloud API, a batch system, a plugin)
 * supplies only what is its own — list what exists, read a run, make, remove, logs — and
 * {@link RemotePods} answers createPod, updatePod, deletePod, getPod, listPods, notifyPods and
 * getContainerLogs around it: on start it adopts the backend's runs of this node (a restarted
 * vkubelet takes them over instead of making more), every interval it reads each pod's run,
 * restarts a run that ended by the pod's restart policy after the kubelet's crash-loop back-off
 * (./restart.ts; the backend restarts a pod's containers together), and pushes what changed.
 * @module
 */
import type { Pod, PodCondition } from "kubernetes-types/core/v1.d.ts";
import type { Clock } from "../base/clock.ts";
import type { CallOptions, ContainerLogOptions, ContainerRef } from "./contract.ts";
import { NotFoundError } from "./errors.ts";
import type { Logger } from "./logger.ts";
import {
  buildPodStatus,
  type ContainerReport,
  type ContainerStateReport,
  terminalPodStatus,
  type TerminatedReport,
} from "./pod_status.ts";
import { podKeyOf, PodTable } from "./pod_table.ts";
import {
  type BackoffEntry,
  type BackoffOptions,
  planRestart,
  shouldRestartPod,
} from "./restart.ts";

/** What a backend says of one pod's run. */
export interface RemoteRun {
  /** The pod it runs: namespace, name and uid at least (from the backend's tags or labels). */
  pod: Pod;
  /**
   * Each container by name (what it does now; restarts, last end and readiness where the backend
   * keeps them); one missing is not created yet.
   */
  containers: Record<string, ContainerReport>;
  /** The pod's IP, once it has one. */
  podIP?: string;
  /** Conditions of the backend's own (types of its own), shown on the pod as they are. */
  conditions?: PodCondition[];
}

/** What a remote backend supplies; every call takes the signal of the call or loop behind it. */
export interface RemoteBackend {
  /** The runs this node made that still exist (adopted on start). */
  list(signal: AbortSignal): Promise<RemoteRun[]>;
  /** The pod's run now; undefined once the backend no longer has it. */
  read(pod: Pod, signal?: AbortSignal): Promise<RemoteRun | undefined>;
  /** Starts a run of the pod (its containers together). */
  make(pod: Pod, signal?: AbortSignal): Promise<void>;
  /** Stops and removes the pod's run; resolves when there is none. */
  remove(pod: Pod, signal?: AbortSignal): Promise<void>;
  /** A container's log. */
  logs?(
    pod: Pod,
    container: string,
    options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>>;
}

/** What {@link RemotePods} needs. */
export interface RemotePodsOptions {
  backend: RemoteBackend;
  clock: Clock;
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
}

interface RemoteRecord {
  pod: Pod;
  run?: RemoteRun;
  restarts: number;
  lastTerminated: Map<string, TerminatedReport>;
  /** When the next run is made (restart back-off), clock ms. */
  restartAtMs?: number;
  backoff?: BackoffEntry;
  /** The containers' final ends once the pod runs no more. */
  finished?: Map<string, TerminatedReport>;
  /** deletePod is removing the run: a run that is gone meanwhile is not made again. */
  deleting?: boolean;
  startTimeMs: number;
}

/** The pods of a remote backend, their life owned by the kit; see the module doc. */
export class RemotePods {
  readonly #o: RemotePodsOptions;
  readonly #table: PodTable<RemoteRecord>;

  /** No pods yet; {@link run} adopts the backend's. */
  constructor(options: RemotePodsOptions) {
    this.#o = options;
    this.#table = new PodTable({
      statusOf: (record, terminal) => this.#statusOf(record, terminal),
      log: options.log,
    });
  }

  /** Adopts the backend's runs of this node, then reads them every interval until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    let adopted!: () => void;
    this.#table.holdUntil(new Promise<void>((resolve) => adopted = resolve));
    try {
      for (const run of await this.#o.backend.list(signal)) this.#adopt(run);
    } catch (err) {
      if (!signal.aborted) this.#o.log.warning("cannot list the backend's pods: {err}", { err });
    } finally {
      adopted();
    }
    while (!signal.aborted) {
      await this.poll(signal).catch((err) => {
        if (!signal.aborted) this.#o.log.warning("status poll failed: {err}", { err });
      });
      await this.#o.clock.sleep(this.#o.intervalMs, signal).catch(() => {});
    }
  }

  /** One round: read every pod's run, apply restart policies, make due runs, push changes. */
  async poll(signal: AbortSignal): Promise<void> {
    for (const record of [...this.#table.records.values()]) {
      if (record.finished || record.deleting) continue;
      if (record.restartAtMs === undefined) {
        const before = record.run;
        const read = await this.#o.backend.read(record.pod, signal).then(
          (run) => ({ run }),
          (err) =>
            void this.#o.log.warning("cannot read {pod}: {err}", {
              pod: podKeyOf(record.pod),
              err,
            }),
        );
        // A backend that does not answer says nothing of the run; a pod deleted meanwhile is gone.
        if (!read || record.deleting || this.#table.records.get(podKeyOf(record.pod)) !== record) {
          continue;
        }
        record.run = read.run;
        this.#ended(record, before, signal);
      }
      if (record.restartAtMs !== undefined && record.restartAtMs <= this.#o.clock.now()) {
        await this.#o.backend.make(record.pod, signal).then(
          () => {
            record.restarts++;
            record.restartAtMs = undefined;
          },
          (err) =>
            this.#o.log.warning("cannot restart {pod} yet: {err}", {
              pod: podKeyOf(record.pod),
              err,
            }),
        );
      }
      this.#table.notify(record);
    }
  }

  /** `Provider.createPod`: makes the pod's run, unless the backend already has it (adopted). */
  async createPod(pod: Pod, options: CallOptions): Promise<void> {
    const known = await this.#table.ofPod(pod, options.signal);
    if (known) {
      known.pod = { ...structuredClone(pod), status: known.pod.status };
    } else {
      const old = this.#table.get(pod.metadata?.namespace, pod.metadata?.name);
      if (old) await this.#remove(old, options.signal); // an older pod of the same name
      await this.#o.backend.make(pod, options.signal);
      const record = this.#record(structuredClone(pod));
      record.run = await this.#o.backend.read(pod, options.signal);
      this.#table.records.set(podKeyOf(pod), record);
    }
    this.#table.notify(this.#table.records.get(podKeyOf(pod))!);
  }

  /** `Provider.updatePod`: a run cannot change; labels and annotations are taken over. */
  updatePod(pod: Pod, _options: CallOptions): Promise<void> {
    const record = this.#table.get(pod.metadata?.namespace, pod.metadata?.name);
    if (record?.pod.metadata?.uid === pod.metadata?.uid && record) {
      record.pod = { ...structuredClone(pod), status: record.pod.status };
      this.#table.notify(record);
    }
    return Promise.resolve();
  }

  /** `Provider.deletePod`: removes the run, pushes the terminal status and forgets the pod. */
  async deletePod(pod: Pod, options: CallOptions): Promise<void> {
    const record = await this.#table.ofPod(pod, options.signal);
    if (record) await this.#remove(record, options.signal);
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
    const record = this.#table.get(ref.namespace, ref.pod);
    const known = [...(record?.pod.spec?.containers ?? [])].some((c) => c.name === ref.container);
    if (!record || !known) {
      throw new NotFoundError(
        `container ${ref.container} of pod ${ref.namespace}/${ref.pod} is not on this node`,
      );
    }
    if (!this.#o.backend.logs) throw new NotFoundError("this backend keeps no logs");
    return await this.#o.backend.logs(record.pod, ref.container, options);
  }

  #record(pod: Pod): RemoteRecord {
    return { pod, restarts: 0, lastTerminated: new Map(), startTimeMs: this.#o.clock.now() };
  }

  #adopt(run: RemoteRun): void {
    const record = this.#record(structuredClone(run.pod));
    record.run = run;
    this.#table.records.set(podKeyOf(run.pod), record);
    this.#o.log.info("adopted {pod}", { pod: podKeyOf(run.pod) });
  }

  /**
   * A run that ended (every container terminated) or is gone while the pod lives (`before`, as
   * last read): the restart policy decides.
   */
  #ended(record: RemoteRecord, before: RemoteRun | undefined, signal: AbortSignal): void {
    const now = this.#o.clock.now();
    const names = (record.pod.spec?.containers ?? []).map((c) => c.name);
    const run = record.run;
    const gone = run === undefined;
    if (run && (this.#o.backendRestarts || names.some((n) => !terminatedOf(run, n)))) return;
    const ends = new Map(names.map((name): [string, TerminatedReport] => [
      name,
      terminatedOf(run ?? before, name) ??
        { exitCode: 137, reason: "ContainerStatusUnknown", finishedAtMs: now },
    ]));
    if (!shouldRestartPod(record.pod, [...ends.values()].map((e) => e.exitCode))) {
      record.finished = ends;
      return;
    }
    record.lastTerminated = ends;
    record.restarts += Math.max(0, ...names.map((n) => before?.containers[n]?.restartCount ?? 0));
    record.run = undefined;
    ({ atMs: record.restartAtMs, entry: record.backoff } = planRestart(
      record.backoff,
      now,
      this.#o.backoff,
    ));
    if (gone) return;
    // The ended run goes before the next is made (a backend may allow one run per pod).
    this.#o.backend.remove(record.pod, signal).catch((err) => {
      this.#o.log.warning("cannot remove the ended run of {pod}: {err}", {
        pod: podKeyOf(record.pod),
        err,
      });
    });
  }

  async #remove(record: RemoteRecord, signal?: AbortSignal): Promise<void> {
    record.deleting = true;
    try {
      await this.#o.backend.remove(record.pod, signal);
    } catch (err) {
      record.deleting = false;
      throw err;
    }
    const now = this.#o.clock.now();
    const status = terminalPodStatus(record.pod, this.#statusOf(record, false), { nowMs: now });
    this.#table.send({ apiVersion: "v1", kind: "Pod", ...record.pod, status });
    this.#table.forget(record);
  }

  #statusOf(record: RemoteRecord, terminal: boolean) {
    const now = this.#o.clock.now();
    const containers: Record<string, ContainerReport> = {};
    for (const c of record.pod.spec?.containers ?? []) {
      const report = record.run?.containers[c.name];
      const lastTerminated = report?.lastTerminated ?? record.lastTerminated.get(c.name);
      containers[c.name] = {
        ...report,
        state: this.#stateOf(record, c.name, now),
        // Restarts of the runs before this one, and the backend's own within it.
        restartCount: record.restarts + (report?.restartCount ?? 0),
        ...(lastTerminated ? { lastTerminated } : {}),
      };
    }
    return buildPodStatus(record.pod, {
      containers,
      nowMs: now,
      startTimeMs: record.startTimeMs,
      podIP: record.run?.podIP,
      hostIP: this.#o.hostIP,
      extraConditions: record.run?.conditions,
      terminal: terminal || record.finished !== undefined,
    });
  }

  #stateOf(record: RemoteRecord, name: string, now: number): ContainerStateReport {
    const finished = record.finished?.get(name);
    if (finished) return { terminated: finished };
    if (record.restartAtMs !== undefined) {
      const seconds = Math.max(0, Math.ceil((record.restartAtMs - now) / 1000));
      return {
        waiting: {
          reason: "CrashLoopBackOff",
          message: `back-off ${seconds}s restarting failed container=${name}`,
        },
      };
    }
    return record.run?.containers[name]?.state ?? { waiting: { reason: "ContainerCreating" } };
  }
}

function terminatedOf(run: RemoteRun | undefined, name: string): TerminatedReport | undefined {
  const state = run?.containers[name]?.state;
  return state && "terminated" in state ? state.terminated : undefined;
}
