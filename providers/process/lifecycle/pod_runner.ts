/**
 * One pod's life on this node, as the kubelet's pod workers run it (kubernetes/kubernetes
 * pkg/kubelet/kuberuntime/kuberuntime_manager.go `computePodActions`/`SyncPod`): volumes
 * first (../volumes/volume_sync.ts), then init containers one at a time in order
 * (./init_containers.ts), then every container, then ephemeral containers (`kubectl debug`,
 * once, never restarted); restarts by `restartPolicy` with the kubelet's back-off
 * (./restart_policy.ts); hooks and probes per instance (./instance_supervisor.ts); graceful
 * stop on delete (../launch/container_stop.ts). Every change is saved to `pod.json` and reported
 * through `changed`.
 * @module
 */
import type { Container, Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import {
  containerRestartPolicy,
  isSidecar,
  type Logger,
  podKeyOf,
  shouldRestart,
} from "../../../provider/mod.ts";
import {
  execContextOf,
  instanceFiles,
  startContainer,
  type StartDeps,
} from "../launch/container_start.ts";
import { allContainers } from "../launch/container_spec.ts";
import { killGraceMs, type LiveContainer, stopContainer } from "../launch/container_stop.ts";
import type { ExecContext } from "../streams/exec.ts";
import { stepInitContainers } from "./init_containers.ts";
import { Instance } from "../launch/instance.ts";
import { superviseInstance } from "./instance_supervisor.ts";
import { hostConditions } from "./pod_conditions.ts";
import { isSameProcess } from "../host/proc.ts";
import { decideStart } from "./restart_policy.ts";
import {
  type ContainerRecord,
  type PodPaths,
  type PodRecord,
  writeRecord,
} from "../state/state.ts";
import { doneWithoutSidecars, phaseOf, podStatus } from "./status.ts";
import { type VolumeContext, VolumeSet } from "../volumes/volumes.ts";
import { VolumeSync } from "../volumes/volume_sync.ts";

/** What a pod runner needs from the provider. */
export interface RunnerDeps extends StartDeps {
  log: Logger;
  hostIp: string;
  volumeContext: Omit<VolumeContext, "paths">;
  /** Called after every status change. */
  changed: () => void;
}

/** Runs one pod; see the module doc. */
export class PodRunner {
  readonly record: PodRecord;
  readonly paths: PodPaths;
  readonly volumes: VolumeSet;
  readonly #deps: RunnerDeps;
  readonly #live = new Map<string, LiveContainer>();
  /** Containers whose start is under way, settled when it has finished. */
  readonly #starting = new Map<string, Promise<void>>();
  readonly #closed = new AbortController();
  readonly #volumeSync: VolumeSync;
  #kick = new AbortController();
  #loop?: Promise<void>;
  #saving: Promise<void> = Promise.resolve();
  /** The status reported last, whose transition times the next one keeps. */
  #lastStatus?: PodStatus;
  /** Sidecars being stopped because the pod's containers are done. */
  readonly #stoppingSidecars = new Set<string>();

  constructor(record: PodRecord, paths: PodPaths, deps: RunnerDeps) {
    this.record = record;
    this.paths = paths;
    this.#deps = deps;
    this.volumes = new VolumeSet(record.pod, { ...deps.volumeContext, paths });
    this.#volumeSync = new VolumeSync(this.volumes, { intervalMs: deps.config.volumeSyncInterval });
  }

  /** Re-adopts instances recorded as running, then starts the loop. */
  start(): void {
    for (const [name, cr] of Object.entries(this.record.containers)) {
      const container = allContainers(this.record.pod).find((c) => c.name === name);
      if (cr.running && container) this.#adopt(container, cr.running);
    }
    this.#loop = this.#run();
  }

  get key(): string {
    return podKeyOf(this.record.pod);
  }

  /** The live instance of a container, for exec, attach, logs and stats. */
  live(name: string): { instance: Instance; exec: ExecContext } | undefined {
    return this.#live.get(name);
  }

  /**
   * Settles once a start of the container that is under way has finished (at once when none
   * is): its process may print before its view is finished and it is tracked, and an exec
   * that read its output must not be told it has not started.
   */
  async started(name: string): Promise<void> {
    await this.#starting.get(name);
  }

  /** The current status. */
  status(): PodStatus {
    this.#lastStatus = podStatus(this.record, {
      nowMs: this.#deps.clock.now(),
      hostIp: this.#deps.hostIp,
      volumesReady: this.#volumeSync.ready,
      extraConditions: hostConditions(this.record, this.#deps),
      previous: this.#lastStatus,
    });
    return this.#lastStatus;
  }

  /** The pod with its current status (a copy). */
  pod(): Pod {
    return structuredClone({ ...this.record.pod, status: this.status() });
  }

  /** Applies a new spec/metadata; a container whose image changed is restarted. */
  async update(pod: Pod): Promise<void> {
    const before = this.record.pod;
    this.record.pod = { ...structuredClone(pod), status: before.status };
    for (const c of allContainers(pod)) {
      const old = allContainers(before).find((o) => o.name === c.name);
      const live = this.#live.get(c.name);
      if (old && live && old.image !== c.image) this.#kill(c, live, `image changed to ${c.image}`);
    }
    this.#volumeSync.expire();
    await this.#save();
    this.#wake();
  }

  /** Stops every container (preStop, SIGTERM, SIGKILL after `graceMs`); nothing restarts. */
  async delete(graceMs: number): Promise<void> {
    this.record.deleting = true;
    await this.#save();
    this.#wake();
    const stopLive = () =>
      Promise.all([...this.#live.entries()].map(([name, live]) => {
        const container = allContainers(this.record.pod).find((c) => c.name === name)!;
        return stopContainer(container, live, { graceMs, clock: this.#deps.clock });
      }));
    await stopLive();
    await this.#loop;
    // A container the loop was starting when delete came is live only now.
    await stopLive();
    for (const cr of Object.values(this.record.containers)) cr.waiting = undefined;
    this.#deps.changed();
  }

  /** Lets go of the pod without stopping anything (vkubelet shutdown). */
  async close(): Promise<void> {
    this.#closed.abort();
    for (const live of this.#live.values()) live.stop.abort();
    await Promise.all([...this.#live.values()].map((l) => l.instance.detach()));
    await this.#loop;
  }

  /** Saves the record in the background (after a change made from outside, e.g. attach). */
  saveSoon(): void {
    this.#save();
  }

  /** The phase (for tests and logs). */
  get phase(): string | undefined {
    return this.status().phase;
  }

  #adopt(container: Container, running: NonNullable<ContainerRecord["running"]>): void {
    const files = instanceFiles(this.paths, container.name, running.instance, {
      ...this.#deps,
      pod: this.record.pod,
    });
    const instance = Instance.adopt(running, files, this.#deps.clock);
    if (!isSameProcess(running.pid, running.startTicks)) {
      this.#deps.log.info("container {container} of {pod} ended while vkubelet was away", {
        container: container.name,
        pod: this.key,
      });
    }
    const exec = execContextOf(
      {
        pod: this.record.pod,
        container,
        volumes: this.volumes,
        paths: this.paths,
        host: this.#deps.hostUser,
        network: this.record.network,
      },
      running,
    );
    this.#track(container, instance, exec);
  }

  async #run(): Promise<void> {
    while (!this.#closed.signal.aborted && !this.record.deleting) {
      // Taken before the step, so that a wake during the step (delete, a container's end) is
      // not lost while the loop then sleeps.
      const kick = this.#kick.signal;
      let wakeAt: number | undefined;
      try {
        wakeAt = await this.#step();
      } catch (err) {
        this.#deps.log.error("pod {pod} sync failed", { pod: this.key, err });
        wakeAt = this.#deps.clock.now() + 5000;
      }
      const wait = Math.max((wakeAt ?? Infinity) - this.#deps.clock.now(), 0);
      const until = AbortSignal.any([this.#closed.signal, kick]);
      if (until.aborted) continue;
      await this.#deps.clock.sleep(Math.min(wait, 2 ** 31 - 1), until).catch(() => {});
    }
  }

  #wake(): void {
    const old = this.#kick;
    this.#kick = new AbortController();
    old.abort();
  }

  /** One pass of the pod's sync; returns when it wants to run again (undefined: on events). */
  async #step(): Promise<number | undefined> {
    const wakes: (number | undefined)[] = [];
    if (this.#volumeSync.due(this.#deps.clock.now())) {
      wakes.push(await this.#syncVolumes());
      if (!this.#volumeSync.ready) return wakes[0];
    }
    wakes.push(this.#volumeSync.nextAt, this.volumes.nextTokenRefresh());
    if (!this.record.initialized) {
      const init = await stepInitContainers(this.record.pod, this.record.containers, {
        ensure: (c) => this.#ensure(c, (t) => this.#restarts(c, t.exitCode)),
        sidecarStarted: (name) => !!this.#live.get(name)?.instance.record.started,
      });
      if (init !== "done") return earliest([...wakes, init === "wait" ? undefined : init]);
      this.record.initialized = true;
      await this.#save();
      this.#deps.changed();
    }
    for (const c of this.record.pod.spec?.containers ?? []) {
      wakes.push(await this.#ensure(c, (t) => this.#restarts(c, t.exitCode)));
    }
    this.#stopSidecarsWhenDone();
    // Ephemeral containers start once in a running pod and are never restarted (the kubelet's
    // computePodActions: EphemeralContainersToStart).
    if (phaseOf(this.record, this.#deps.clock.now()) === "Running") {
      for (const c of this.record.pod.spec?.ephemeralContainers ?? []) {
        await this.#ensure(c as Container, () => false);
      }
    }
    return earliest(wakes);
  }

  /**
   * Stops the running sidecars once the regular containers are done for good, as the kubelet
   * does (kuberuntime_manager.go `computePodActions`): when the kit's phase of the pod with its
   * sidecars stopped is terminal.
   */
  #stopSidecarsWhenDone(): void {
    const sidecars = (this.record.pod.spec?.initContainers ?? []).filter((c) =>
      isSidecar(c) && this.#live.has(c.name) && !this.#stoppingSidecars.has(c.name)
    );
    if (sidecars.length === 0) return;
    if (!doneWithoutSidecars(this.record, sidecars, this.#deps.clock.now())) return;
    for (const c of sidecars) {
      this.#stoppingSidecars.add(c.name);
      const graceMs = killGraceMs(c, this.record.pod);
      stopContainer(c, this.#live.get(c.name)!, { graceMs, clock: this.#deps.clock }).catch(
        () => {},
      );
    }
  }

  async #syncVolumes(): Promise<number> {
    const result = await this.#volumeSync.run(
      this.record.pod,
      this.#deps.clock.now(),
      this.#closed.signal,
    );
    if (result.ok) {
      if (result.first) this.#deps.changed();
    } else if (result.ready) {
      this.#deps.log.warn("volumes of {pod} not refreshed: {err}", {
        pod: this.key,
        err: result.message,
      });
    } else if (result.changed) {
      for (const c of allContainers(this.record.pod)) {
        this.#containerRecord(c).waiting = {
          reason: "ContainerCreating",
          message: `MountVolume.SetUp failed: ${result.message}`,
        };
      }
      this.#deps.changed();
    }
    return result.wakeAt;
  }

  /** The kit's restart rule for `c` (a sidecar always, an init container after a failure). */
  #restarts(c: Container, exitCode: number): boolean {
    return shouldRestart(containerRestartPolicy(this.record.pod, c), exitCode);
  }

  /** Starts `c` if it should run now; returns when to look again for its back-off. */
  async #ensure(
    c: Container,
    restart: (t: NonNullable<ContainerRecord["terminated"]>) => boolean,
  ): Promise<number | undefined> {
    const cr = this.#containerRecord(c);
    const decision = decideStart(this.record.pod, c, cr, {
      restart,
      nowMs: this.#deps.clock.now(),
    });
    if (decision.action === "none") return undefined;
    if (decision.action === "back-off") {
      if (cr.waiting?.reason !== decision.waiting.reason) {
        cr.waiting = decision.waiting;
        await this.#save();
        this.#deps.changed();
      }
      return decision.until;
    }
    // The back-off is over: while the new instance starts (a mount namespace takes a moment)
    // the status must not pair the new restart count with the old back-off message.
    if (cr.waiting?.reason === "CrashLoopBackOff") cr.waiting = undefined;
    await this.#start(c, cr);
    return undefined;
  }

  async #start(c: Container, cr: ContainerRecord): Promise<void> {
    const done = Promise.withResolvers<void>();
    this.#starting.set(c.name, done.promise);
    try {
      await this.#startNow(c, cr);
    } finally {
      this.#starting.delete(c.name);
      done.resolve();
    }
  }

  async #startNow(c: Container, cr: ContainerRecord): Promise<void> {
    const result = await startContainer(this.record.pod, c, cr.restartCount, {
      paths: this.paths,
      volumes: this.volumes,
      deps: this.#deps,
      network: this.record.network,
    });
    cr.image = c.image ?? "";
    if (result.kind === "config-error") {
      cr.waiting = { reason: "CreateContainerConfigError", message: result.message };
    } else if (result.kind === "create-error") {
      cr.waiting = { reason: "CreateContainerError", message: result.message };
    } else if (result.kind === "start-error") {
      const now = this.#deps.clock.now();
      cr.waiting = undefined;
      cr.terminated = {
        instance: cr.restartCount,
        exitCode: 128,
        reason: "StartError",
        message: result.message,
        startedAtMs: now,
        finishedAtMs: now,
        containerId: `process://start-error-${cr.restartCount}`,
      };
      this.#wake();
    } else {
      cr.waiting = undefined;
      cr.running = result.instance.record;
      this.#track(c, result.instance, result.exec);
    }
    await this.#save();
    this.#deps.changed();
  }

  /** Watches an instance: hooks, probes, and its end. */
  #track(c: Container, instance: Instance, exec: ExecContext): void {
    const live: LiveContainer = { instance, exec, stop: new AbortController() };
    this.#live.set(c.name, live);
    const signal = AbortSignal.any([live.stop.signal, this.#closed.signal]);
    superviseInstance(c, live, {
      clock: this.#deps.clock,
      signal,
      events: {
        flag: (flag, value) => this.#setFlag(instance, flag, value),
        kill: (message) => this.#kill(c, live, message),
      },
    }).catch((err) => this.#deps.log.error("probes of {pod} failed", { pod: this.key, err }));
    instance.ended.then(async (termination) => {
      live.stop.abort();
      if (this.#live.get(c.name) === live) this.#live.delete(c.name);
      const cr = this.#containerRecord(c);
      cr.running = undefined;
      cr.terminated = live.killMessage
        ? { ...termination, message: live.killMessage }
        : termination;
      await this.#save();
      this.#deps.changed();
      this.#wake();
    });
  }

  #setFlag(instance: Instance, flag: "started" | "ready", value: boolean): void {
    if (instance.record[flag] === value) return;
    instance.record[flag] = value;
    this.#save().then(() => this.#deps.changed());
  }

  #kill(c: Container, live: LiveContainer, message: string): void {
    live.killMessage = message;
    this.#deps.log.info("killing container {container} of {pod}: {message}", {
      container: c.name,
      pod: this.key,
      message,
    });
    const graceMs = killGraceMs(c, this.record.pod);
    stopContainer(c, live, { graceMs, clock: this.#deps.clock }).catch(() => {});
  }

  #containerRecord(c: Container): ContainerRecord {
    return this.record.containers[c.name] ??= {
      name: c.name,
      restartCount: 0,
      image: c.image ?? "",
    };
  }

  /** Saves the record; saves are serialised so that the last state always lands last. */
  #save(): Promise<void> {
    this.#saving = this.#saving.then(() => writeRecord(this.paths.record, this.record)).catch(
      (err) => {
        // After delete the directory is gone; a late save has nothing left to record.
        if (!this.record.deleting) {
          this.#deps.log.error("cannot save state of {pod}", { pod: this.key, err });
        }
      },
    );
    return this.#saving;
  }
}

function earliest(times: (number | undefined)[]): number | undefined {
  const defined = times.filter((t): t is number => t !== undefined);
  return defined.length ? Math.min(...defined) : undefined;
}
