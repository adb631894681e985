/**
 * One pod's life on this node, as the kubelet's pod workers run it (kubernetes/kubernetes
 * pkg/kubelet/kuberuntime/kuberuntime_manager.go `computePodActions`/`SyncPod`): volumes
 * first, then init containers one at a time in order, then every container; restarts by
 * `restartPolicy` with the kubelet's back-off; probes and lifecycle hooks per instance;
 * graceful stop on delete. Every change is saved to `pod.json` and reported through `changed`.
 * @module
 */
import type { Container, Pod, PodCondition, PodStatus } from "kubernetes-types/core/v1.d.ts";
import type { Logger } from "../../lib/log.ts";
import { backoffUntil, recordRestart } from "./backoff.ts";
import { hasLimits } from "./cgroups.ts";
import { execContextOf, instanceFiles, startContainer, type StartDeps } from "./container_start.ts";
import { allContainers } from "./container_spec.ts";
import type { ExecContext } from "./exec.ts";
import { runAction } from "./handlers.ts";
import { Instance } from "./instance.ts";
import { isSameProcess } from "./proc.ts";
import { runProbes } from "./probes.ts";
import { type ContainerRecord, type PodPaths, type PodRecord, writeRecord } from "./state.ts";
import { podPhase, podStatus } from "./status.ts";
import type { VolumeContext } from "./volumes.ts";
import { VolumeSet } from "./volumes.ts";

/** What a pod runner needs from the provider. */
export interface RunnerDeps extends StartDeps {
  log: Logger;
  hostIp: string;
  volumeContext: Omit<VolumeContext, "paths">;
  /** Called after every status change. */
  changed: () => void;
}

interface Live {
  instance: Instance;
  exec: ExecContext;
  /** Aborts the instance's probes and hooks. */
  stop: AbortController;
  killMessage?: string;
}

/** Runs one pod; see the module doc. */
export class PodRunner {
  readonly record: PodRecord;
  readonly paths: PodPaths;
  readonly volumes: VolumeSet;
  readonly #deps: RunnerDeps;
  readonly #live = new Map<string, Live>();
  readonly #closed = new AbortController();
  #kick = new AbortController();
  #loop?: Promise<void>;
  #volumesReady = false;
  #volumeError?: string;
  #nextVolumeSync = 0;
  #volumeRetryMs = 1000;

  constructor(record: PodRecord, paths: PodPaths, deps: RunnerDeps) {
    this.record = record;
    this.paths = paths;
    this.#deps = deps;
    this.volumes = new VolumeSet(record.pod, { ...deps.volumeContext, paths });
  }

  /** Re-adopts instances recorded as running, then starts the loop. */
  start(): void {
    for (const [name, cr] of Object.entries(this.record.containers)) {
      const container = allContainers(this.record.pod).find((c) => c.name === name);
      if (!cr.running || !container) continue;
      const files = instanceFiles(this.paths, name, cr.running.instance, this.#deps);
      const instance = Instance.adopt(cr.running, files, this.#deps.clock);
      if (!isSameProcess(cr.running.pid, cr.running.startTicks)) {
        this.#deps.log.info("container {container} of {pod} ended while vkubelet was away", {
          container: name,
          pod: this.key,
        });
      }
      const exec = execContextOf(
        this.record.pod,
        container,
        this.volumes,
        this.paths,
        cr.running.pid,
        cr.running.namespaced,
      );
      this.#track(container, instance, exec);
    }
    this.#loop = this.#run();
  }

  get key(): string {
    return `${this.record.pod.metadata?.namespace}/${this.record.pod.metadata?.name}`;
  }

  /** The live instance of a container, for exec, logs and stats. */
  live(name: string): { instance: Instance; exec: ExecContext } | undefined {
    return this.#live.get(name);
  }

  /** The current status. */
  status(): PodStatus {
    return podStatus(this.record, {
      nowMs: this.#deps.clock.now(),
      hostIp: this.#deps.hostIp,
      volumesReady: this.#volumesReady,
      extraConditions: this.#conditions(),
    });
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
    this.#nextVolumeSync = 0;
    await this.#save();
    this.#wake();
  }

  /** Stops every container (preStop, SIGTERM, SIGKILL after `graceMs`); nothing restarts. */
  async delete(graceMs: number): Promise<void> {
    this.record.deleting = true;
    await this.#save();
    this.#wake();
    const stops = [...this.#live.entries()].map(([name, live]) => {
      const container = allContainers(this.record.pod).find((c) => c.name === name)!;
      return this.#stopInstance(container, live, graceMs);
    });
    await Promise.all(stops);
    await this.#loop;
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

  async #run(): Promise<void> {
    while (!this.#closed.signal.aborted && !this.record.deleting) {
      let wakeAt: number | undefined;
      try {
        wakeAt = await this.#step();
      } catch (err) {
        this.#deps.log.error("pod {pod} sync failed", { pod: this.key, err });
        wakeAt = this.#deps.clock.now() + 5000;
      }
      const kick = this.#kick.signal;
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
    const now = this.#deps.clock.now();
    const wakes: (number | undefined)[] = [];
    if (!this.#volumesReady || now >= this.#nextVolumeSync) {
      wakes.push(await this.#syncVolumes());
      if (!this.#volumesReady) return wakes[0];
    }
    wakes.push(this.#nextVolumeSync, this.volumes.nextTokenRefresh());
    if (!this.record.initialized) {
      const init = await this.#stepInit();
      if (init !== "done") return earliest([...wakes, init === "wait" ? undefined : init]);
      this.record.initialized = true;
      await this.#save();
      this.#deps.changed();
    }
    for (const c of this.record.pod.spec?.containers ?? []) {
      wakes.push(await this.#ensure(c, (t) => shouldRestart(this.record, t.exitCode)));
    }
    return earliest(wakes);
  }

  async #syncVolumes(): Promise<number> {
    const now = this.#deps.clock.now();
    try {
      await this.volumes.sync(this.record.pod, this.#closed.signal);
      const first = !this.#volumesReady;
      this.#volumesReady = true;
      this.#volumeError = undefined;
      this.#volumeRetryMs = 1000;
      this.#nextVolumeSync = now + this.#deps.config.volumeSyncInterval;
      if (first) this.#deps.changed();
      return this.#nextVolumeSync;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (this.#volumesReady) {
        this.#deps.log.warn("volumes of {pod} not refreshed: {err}", {
          pod: this.key,
          err: message,
        });
        return now + this.#deps.config.volumeSyncInterval;
      }
      if (message !== this.#volumeError) {
        this.#volumeError = message;
        for (const c of allContainers(this.record.pod)) {
          this.#containerRecord(c).waiting = {
            reason: "ContainerCreating",
            message: `MountVolume.SetUp failed: ${message}`,
          };
        }
        this.#deps.changed();
      }
      this.#volumeRetryMs = Math.min(this.#volumeRetryMs * 2, 30_000);
      return now + this.#volumeRetryMs;
    }
  }

  /** Init containers in order: "done", "wait" (one is running) or when to look again. */
  async #stepInit(): Promise<"done" | "wait" | number | undefined> {
    const policy = this.record.pod.spec?.restartPolicy ?? "Always";
    for (const c of this.record.pod.spec?.initContainers ?? []) {
      const cr = this.record.containers[c.name];
      if (c.restartPolicy === "Always") {
        // A sidecar: started in order, then kept running with the pod.
        const wake = await this.#ensure(c, () => true);
        if (!this.#live.get(c.name)?.instance.record.started) return wake ?? "wait";
        continue;
      }
      if (cr?.terminated?.exitCode === 0 && !cr.running) continue;
      if (cr?.running) return "wait";
      if (cr?.terminated && policy === "Never") return "wait";
      return await this.#ensure(c, () => true) ?? "wait";
    }
    return "done";
  }

  /** Starts `c` if it should run now; returns when to look again for its back-off. */
  async #ensure(c: Container, restart: (t: NonNullable<ContainerRecord["terminated"]>) => boolean) {
    const cr = this.#containerRecord(c);
    if (cr.running) return undefined;
    const now = this.#deps.clock.now();
    const t = cr.terminated;
    if (t) {
      if (!restart(t)) return undefined;
      const until = backoffUntil(cr, t.finishedAtMs, now);
      if (until !== undefined) {
        const delay = Math.round((cr.backoff?.delayMs ?? 0) / 1000);
        const message =
          `back-off ${delay}s restarting failed container=${c.name} pod=${this.record.pod.metadata?.name}_${this.record.pod.metadata?.namespace}(${this.record.pod.metadata?.uid})`;
        if (cr.waiting?.reason !== "CrashLoopBackOff") {
          cr.waiting = { reason: "CrashLoopBackOff", message };
          await this.#save();
          this.#deps.changed();
        }
        return until;
      }
      recordRestart(cr, t.finishedAtMs, now);
      cr.restartCount++;
      cr.lastTermination = t;
      cr.terminated = undefined;
    }
    await this.#start(c, cr);
    return undefined;
  }

  async #start(c: Container, cr: ContainerRecord): Promise<void> {
    const result = await startContainer(this.record.pod, c, cr.restartCount, {
      paths: this.paths,
      volumes: this.volumes,
      deps: this.#deps,
    });
    cr.image = c.image ?? "";
    if (result.kind === "config-error") {
      cr.waiting = { reason: "CreateContainerConfigError", message: result.message };
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
    const live: Live = { instance, exec, stop: new AbortController() };
    this.#live.set(c.name, live);
    const signal = AbortSignal.any([live.stop.signal, this.#closed.signal]);
    (async () => {
      if (c.lifecycle?.postStart && !instance.record.started) {
        const result = await runAction(c.lifecycle.postStart, {
          exec,
          container: c,
          timeoutMs: 30_000,
          clock: this.#deps.clock,
          signal,
        });
        if (!result.ok && !signal.aborted) {
          return this.#kill(c, live, `PostStartHookError: ${result.message}`);
        }
      }
      await runProbes({ container: c, exec, clock: this.#deps.clock, signal }, {
        started: () => this.#setFlag(instance, "started", true),
        ready: (ready) => this.#setFlag(instance, "ready", ready),
        failed: (_probe, message) => this.#kill(c, live, message),
      });
    })().catch((err) => this.#deps.log.error("probes of {pod} failed", { pod: this.key, err }));
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

  #kill(c: Container, live: Live, message: string): void {
    live.killMessage = message;
    this.#deps.log.info("killing container {container} of {pod}: {message}", {
      container: c.name,
      pod: this.key,
      message,
    });
    const probeGrace = c.livenessProbe?.terminationGracePeriodSeconds;
    const grace = (probeGrace ?? this.record.pod.spec?.terminationGracePeriodSeconds ?? 30) * 1000;
    this.#stopInstance(c, live, grace).catch(() => {});
  }

  async #stopInstance(c: Container, live: Live, graceMs: number): Promise<void> {
    const { clock } = this.#deps;
    const started = clock.now();
    live.stop.abort();
    const preStop = c.lifecycle?.preStop;
    if (preStop) {
      const budget = new AbortController();
      const timer = clock.sleep(graceMs, budget.signal).then(() => budget.abort(), () => {});
      await runAction(preStop, {
        exec: live.exec,
        container: c,
        timeoutMs: graceMs,
        clock,
        signal: budget.signal,
      });
      budget.abort();
      await timer;
    }
    // The kubelet gives at least 2 s after preStop (kuberuntime_container.go minimumGracePeriodInSeconds).
    const rest = Math.max(graceMs - (clock.now() - started), preStop ? 2000 : 0);
    await live.instance.stop(rest);
  }

  #containerRecord(c: Container): ContainerRecord {
    return this.record.containers[c.name] ??= {
      name: c.name,
      restartCount: 0,
      image: c.image ?? "",
    };
  }

  #conditions(): PodCondition[] {
    const out: PodCondition[] = [];
    const containers = allContainers(this.record.pod);
    const at = new Date(this.record.startTimeMs).toISOString().replace(/\.\d+Z$/, "Z");
    if (
      containers.some((c) => c.volumeMounts?.length) &&
      this.#deps.config.mountNamespace !== "off" && !this.#deps.mountNamespace.ok
    ) {
      out.push({
        type: "vkubelet.io/VolumesAtMountPath",
        status: "False",
        reason: "NoMountNamespace",
        message:
          `volumes are not at their mountPath (${this.#deps.mountNamespace.reason}); containers find them through VKUBELET_VOLUME_<NAME> variables`,
        lastTransitionTime: at,
      });
    }
    if (containers.some(hasLimits) && !this.#deps.cgroups.ok) {
      out.push({
        type: "vkubelet.io/ResourceLimitsEnforced",
        status: "False",
        reason: "NoCgroupV2",
        message: `resource limits are reported, not enforced: ${this.#deps.cgroups.reason}`,
        lastTransitionTime: at,
      });
    }
    return out;
  }

  #saving: Promise<void> = Promise.resolve();

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

  /** The phase (for tests and logs). */
  get phase(): string | undefined {
    return podPhase(this.record);
  }
}

function earliest(times: (number | undefined)[]): number | undefined {
  const defined = times.filter((t): t is number => t !== undefined);
  return defined.length ? Math.min(...defined) : undefined;
}

function shouldRestart(record: PodRecord, exitCode: number): boolean {
  const policy = record.pod.spec?.restartPolicy ?? "Always";
  return policy === "Always" || (policy === "OnFailure" && exitCode !== 0);
}
