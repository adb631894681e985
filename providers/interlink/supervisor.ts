/**
 * The status loop: one `/status` call a period for every pod with a job, its answers mapped onto
 * the records; the restart policy applied when a job ends or the plugin forgets a pod; back-off
 * while the plugin does not answer. On start (target plugin) it adopts the pods the plugin says
 * this node created (vkubelet's `node` field), so a restarted vkubelet lists them at once.
 * Pacing as interLink's virtual kubelet `statusLoop` (pkg/virtualkubelet/virtualkubelet.go,
 * interlink-hq/interLink commit f632175701d78b604138ce2e1e38af13d1f7546b), but one call for all
 * pods rather than one per pod.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { answered } from "./client.ts";
import type { Clock, Logger } from "../../provider/mod.ts";
import type { InterlinkApi } from "./api.ts";
import {
  planRestart,
  type PodEventSink,
  podKey,
  podKeyOf,
  RESTART_BACKOFF_INITIAL_MS,
  shouldRestartPod,
} from "../../provider/mod.ts";
import { jobEnded, type PodRecord, terminatedOf } from "./status.ts";
import { type InterlinkPodStatus, provesJob } from "./wire.ts";

/** What the loop needs. */
export interface SupervisorDeps {
  api: Pick<InterlinkApi, "status" | "delete">;
  records: Map<string, PodRecord>;
  nodeName: string;
  clock: Clock;
  log: Logger;
  intervalMs: number;
  /** How long a sighted job may be left out of `/status` answers before it is lost. */
  statusCacheWindowMs: number;
  event: PodEventSink;
  /** Adopt the plugin's pods of this node on start (target plugin). */
  discover: boolean;
  /** Submits a new job for the record (a restart). */
  start(record: PodRecord, signal: AbortSignal): Promise<void>;
  /** The record's status may have changed. */
  changed(record: PodRecord): void;
}

/** Runs the status loop; see the module doc. */
export class StatusSupervisor {
  readonly #deps: SupervisorDeps;
  #adopted!: () => void;
  /** Resolves once the start-up adoption is done (or failed). */
  readonly adopted: Promise<void> = new Promise((r) => this.#adopted = r);
  #failures = 0;

  constructor(deps: SupervisorDeps) {
    this.#deps = deps;
  }

  /** Polls until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const { clock, log } = this.#deps;
    try {
      if (this.#deps.discover) await this.#discover(signal);
    } catch (err) {
      if (!signal.aborted) log.warn("start-up listing failed: {err}", { err: String(err) });
    } finally {
      this.#adopted();
    }
    while (!signal.aborted) {
      let failed: unknown;
      try {
        await this.pollOnce(signal);
        if (this.#failures > 0) log.info("status poll answers again", {});
        this.#failures = 0;
      } catch (err) {
        if (signal.aborted) break;
        this.#failures++;
        failed = err;
      }
      // Back off while the plugin fails: double the period, up to 8 times it. A pod's state is
      // left as it was: only an answer that leaves the pod out says the plugin lost it.
      const wait = this.#deps.intervalMs * 2 ** Math.min(this.#failures, 3);
      if (failed !== undefined) {
        log.warn("status poll failed ({n} in a row), next in {next} ms: {err}", {
          n: this.#failures,
          next: wait,
          err: String(failed),
        });
      }
      await clock.sleep(wait, signal).catch(() => {});
    }
  }

  /** One round: status of every pod with a job, then restarts that are due. */
  async pollOnce(signal: AbortSignal): Promise<void> {
    const polled = [...this.#deps.records.values()].filter((r) =>
      r.jobId !== undefined && !r.finished && r.restartAtMs === undefined
    );
    if (polled.length > 0) {
      const answer = await this.#deps.api.status(polled.map((r) => r.pod), signal);
      const byUid = new Map(answer.map((s) => [s.UID, s]));
      for (const record of polled) {
        if (record.finished || !this.#deps.records.has(podKeyOf(record.pod))) continue;
        const status = byUid.get(record.pod.metadata?.uid ?? "");
        if (provesJob(status)) this.#apply(record, status!);
        else if (this.#missingLongEnough(record)) this.#lost(record);
      }
    }
    await this.#restartDue(signal);
  }

  /**
   * The job is not in this answer (left out, or an entry with empty states). It is lost only
   * once it had been sighted, then missed by two answers in a row over more than
   * `statusCacheWindow`: the SLURM plugin answers from a copy up to 10 s old made for the pods
   * of an earlier call (interlink-hq/interlink-slurm-plugin f8451d93, pkg/slurm/Status.go:133,
   * 480-485), and interLink's API server answers only from its cache, which holds a pod after
   * the plugin answered for it (interlink-hq/interLink 9ed14a4e, pkg/interlink/api/status.go:
   * 54-67, 104-116), so a pod can be left out for a while without being gone.
   */
  #missingLongEnough(record: PodRecord): boolean {
    if (!record.seen) return false;
    const now = this.#deps.clock.now();
    const missing = record.missing ?? { sinceMs: now, answers: 0 };
    missing.answers++;
    record.missing = missing;
    return missing.answers >= 2 && now - missing.sinceMs > this.#deps.statusCacheWindowMs;
  }

  #apply(record: PodRecord, status: InterlinkPodStatus): void {
    record.remote = status;
    record.waiting = undefined;
    record.lost = false;
    record.seen = true;
    record.missing = undefined;
    if (status.JID) record.jobId = status.JID;
    const { ended, restart } = jobEnded(record);
    if (ended) this.#ended(record, restart, "");
    this.#deps.changed(record);
  }

  /** The plugin no longer knows the pod: its job is gone; the restart policy decides. */
  #lost(record: PodRecord): void {
    const now = this.#deps.clock.now();
    const message = `the plugin no longer reports the pod (job ${record.jobId || "unknown"})`;
    this.#deps.event(record.pod, "Warning", "InterlinkPodLost", message);
    const containers = record.pod.spec?.containers ?? [];
    record.remote = {
      ...(record.remote ?? { name: "", UID: "", namespace: "" }),
      containers: containers.map((c) => ({
        name: c.name,
        image: c.image ?? "",
        imageID: "",
        ready: false,
        restartCount: 0,
        state: {
          terminated: { exitCode: 137, reason: "Lost", message, finishedAt: iso(now) },
        },
      })),
    };
    record.lost = true;
    this.#ended(record, shouldRestartPod(record.pod, [137]), message);
    this.#deps.changed(record);
  }

  #ended(record: PodRecord, restart: boolean, why: string): void {
    const now = this.#deps.clock.now();
    const ends = new Map(
      (record.remote?.containers ?? []).filter((s) => s.state?.terminated)
        .map((s) => [s.name, terminatedOf(s, now)]),
    );
    if (!restart) {
      record.finished = ends;
      return;
    }
    record.lastTerminated = ends;
    ({ atMs: record.restartAtMs, entry: record.backoff } = planRestart(record.backoff, now));
    record.waiting = {
      reason: "CrashLoopBackOff",
      message: `back-off restarting the pod's job${why ? `: ${why}` : ""}`,
    };
  }

  async #restartDue(signal: AbortSignal): Promise<void> {
    const now = this.#deps.clock.now();
    for (const record of this.#deps.records.values()) {
      if (record.restartAtMs === undefined || record.restartAtMs > now || record.finished) continue;
      const old = record.jobId;
      try {
        // The ended job goes first, so that the plugin never holds two for the pod.
        if (old !== undefined && !record.lost) {
          await this.#deps.api.delete(record.pod, signal).catch((err) => {
            if (!answered(err)) throw err;
          });
        }
        record.restarts++;
        record.remote = undefined;
        await this.#deps.start(record, signal);
        record.restartAtMs = undefined;
        this.#deps.event(
          record.pod,
          "Normal",
          "Restarted",
          `job ${old} ended; new job ${record.jobId}`,
        );
      } catch (err) {
        if (signal.aborted) return;
        this.#deps.log.warn("restart of {pod} failed: {err}", {
          pod: podKeyOf(record.pod),
          err: String(err),
        });
        // A job that cannot be started yet is tried again after the back-off's current wait.
        record.restartAtMs = now + (record.backoff?.delayMs ?? RESTART_BACKOFF_INITIAL_MS);
      }
      this.#deps.changed(record);
    }
  }

  async #discover(signal: AbortSignal): Promise<void> {
    const all = await this.#deps.api.status([], signal);
    for (const status of all) {
      if (status.node !== this.#deps.nodeName || !status.name || !status.namespace) continue;
      if (!provesJob(status)) continue;
      const k = podKey(status.namespace, status.name);
      if (this.#deps.records.has(k)) continue;
      const names = (list?: { name: string }[] | null) =>
        (list ?? []).map((c) => ({
          name: c.name,
          image: "",
        }));
      const pod: Pod = {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { namespace: status.namespace, name: status.name, uid: status.UID },
        spec: {
          nodeName: this.#deps.nodeName,
          containers: names(status.containers),
          ...(status.initContainers?.length
            ? { initContainers: names(status.initContainers) }
            : {}),
        },
      };
      const record: PodRecord = {
        pod,
        jobId: status.JID ?? "",
        remote: status,
        seen: true,
        restarts: 0,
        lastTerminated: new Map(),
        startTimeMs: this.#deps.clock.now(),
      };
      this.#deps.records.set(k, record);
      this.#deps.changed(record);
    }
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");
}
