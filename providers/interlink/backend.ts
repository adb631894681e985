/**
 * An interLink plugin as the kit's remote backend: a pod's run is one job (its handle: the job as
 * `/status` last showed it). The kit's RemotePods adopts, polls, restarts and notifies; this file
 * holds what is interLink's: one `/status` call for every pod, adoption only of a job `/status`
 * proves (./client/wire.ts provesJob), a sighted job lost only after `statusCacheWindow` and two answers
 * in a row, `/create` with what the pod's volumes refer to — a timed-out create adopted later and
 * never sent twice, refusals failing the pod after `createAttempts` — and `/delete`.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type Clock,
  decodePodTag,
  InvalidInputError,
  type Logger,
  type PodEventSink,
  podEventSink,
  podKeyOf,
  type ProviderDeps,
  type ProviderKubeClient,
  type RemoteBackend,
  type RemoteMakeOptions,
  type RemoteProviderSetup,
  type RemoteRead,
  type RemoteRun,
  standInPod,
  TransientError,
} from "../../provider/mod.ts";
import type { InterlinkApi } from "./client/api.ts";
import { answered, timedOut } from "./client/http_client.ts";
import type { InterlinkConfig } from "./config.ts";
import { type Job, lostRun, runOf } from "./status.ts";
import { downwardAsProjected, podObjects } from "./request/volumes.ts";
import { CreateRefusedError, provesJob } from "./client/wire.ts";
import { withTunnelAgent } from "./request/tunnel_agent.ts";

/** What {@link InterlinkBackend} needs. */
export interface InterlinkBackendDeps {
  api: Pick<InterlinkApi, "status" | "create" | "delete">;
  config: Pick<
    InterlinkConfig,
    "target" | "statusCacheWindow" | "createAttempts" | "tokenExpirationSeconds"
  >;
  kube?: ProviderKubeClient;
  nodeName: string;
  clock: Clock;
  log: Logger;
  event: PodEventSink;
  /** The node's IP: a pod's IP unless annotated `interlink.eu/pod-ip`. */
  hostIP: string;
}

/**
 * How the interlink provider runs its pods on the kit: {@link InterlinkBackend} on `api`, and the
 * kit's options for interLink; close closes `client`.
 */
export function interlinkJobsSetup(
  config: InterlinkConfig,
  deps: ProviderDeps & { api: InterlinkApi; client: { close(): void } },
): RemoteProviderSetup<Job, InterlinkBackend> {
  const { api, client } = deps;
  const event = podEventSink(deps, "vkubelet-interlink");
  return {
    backend: new InterlinkBackend({ ...deps, api, config, event, hostIP: deps.internalIp }),
    intervalMs: config.statusInterval,
    // The plugin gets the pod with its `lifecycle` and runs the hooks in the job (the SLURM
    // plugin: interlink-hq/interlink-slurm-plugin f8451d93, pkg/slurm/Create.go, hooks.go).
    hooks: "backend",
    keepPodIP: true,
    // Pacing as interLink's virtual kubelet statusLoop (pkg/virtualkubelet/virtualkubelet.go,
    // interlink-hq/interLink f632175701d78b604138ce2e1e38af13d1f7546b), one call for all pods.
    pollBackoff: true,
    closeClient: () => client.close(),
  };
}

/** Creates that failed, by pod UID: refusals so far, when the last timed out, unseen since. */
interface CreateTries {
  refused: number;
  timedOutAtMs?: number;
  unseenSinceMs?: number;
}

/** interLink for RemotePods; see the module doc. */
export class InterlinkBackend implements RemoteBackend<Job> {
  readonly #d: InterlinkBackendDeps;
  readonly #creates = new Map<string, CreateTries>();
  /** Each pod's last job ID, by UID (for the restart's event). */
  readonly #jobs = new Map<string, string>();
  /** UIDs of pods whose ended job the plugin still holds, until the next is made. */
  readonly #ended = new Set<string>();

  constructor(deps: InterlinkBackendDeps) {
    this.#d = deps;
  }

  /**
   * The jobs the plugin says this node created (vkubelet's `node` field). interLink's API server
   * and a plugin that cannot list (the SLURM plugin answers a `/status` of no pods with its
   * resources) have none to give.
   */
  async list(signal: AbortSignal): Promise<RemoteRun<Job>[]> {
    if (this.#d.config.target !== "plugin") return [];
    const runs: RemoteRun<Job>[] = [];
    for (const status of await this.#d.api.status([], signal)) {
      const { node, namespace, name, UID: uid } = status;
      const tag = decodePodTag({ node, namespace, name, uid });
      if (tag?.node !== this.#d.nodeName || !provesJob(status)) continue;
      const names = (list?: { name: string }[] | null) =>
        (list ?? []).map((c) => ({ name: c.name, image: "" }));
      const pod = standInPod(tag, {
        containers: names(status.containers),
        initContainers: names(status.initContainers),
      });
      runs.push(this.#runOf(pod, { jobId: status.JID ?? "", remote: status, seen: true }));
    }
    return runs;
  }

  /**
   * One `/status` call for every pod. A job the answer leaves out (or shows with empty states)
   * is lost only once it had been sighted, then missed by two answers in a row over more than
   * `statusCacheWindow`: the SLURM plugin answers from a copy up to 10 s old made for the pods
   * of an earlier call (interlink-hq/interlink-slurm-plugin f8451d93, pkg/slurm/Status.go:133,
   * 480-485), and interLink's API server answers only from its cache, which holds a pod after
   * the plugin answered for it (interlink-hq/interLink 9ed14a4e, pkg/interlink/api/status.go:
   * 54-67, 104-116), so a pod can be left out for a while without being gone.
   */
  async readMany(
    reads: RemoteRead<Job>[],
    signal?: AbortSignal,
  ): Promise<(RemoteRun<Job> | undefined)[]> {
    const answer = await this.#d.api.status(reads.map((r) => r.pod), signal);
    const byUid = new Map(answer.map((s) => [s.UID, s]));
    const now = this.#d.clock.now();
    return reads.map(({ pod, run }) => {
      const job: Job = run?.handle ?? { jobId: "", seen: false };
      const status = byUid.get(pod.metadata?.uid ?? "");
      if (provesJob(status)) {
        return this.#runOf(pod, { jobId: status!.JID || job.jobId, remote: status, seen: true });
      }
      if (!run || !job.seen) return run;
      const before = job.missing ?? { sinceMs: now, answers: 0 };
      const missing = { sinceMs: before.sinceMs, answers: before.answers + 1 };
      if (missing.answers < 2 || now - missing.sinceMs <= this.#d.config.statusCacheWindow) {
        return { ...run, handle: { ...job, missing } };
      }
      const message = `the plugin no longer reports the pod (job ${job.jobId || "unknown"})`;
      this.#d.event(pod, "Warning", "InterlinkPodLost", message);
      return lostRun(run, job, message, now);
    });
  }

  /**
   * A pod's first job: adopted when `/status` shows the plugin already runs it (a restarted
   * vkubelet, a create whose answer was lost), otherwise `/create` by the rules of
   * {@link #createOnce}. A restart deletes the ended job, then creates the next.
   */
  async make(
    pod: Pod,
    signal?: AbortSignal,
    options?: RemoteMakeOptions,
  ): Promise<RemoteRun<Job>> {
    pod = withTunnelAgent(pod, options?.network); // the pod network's agent (issue 64)
    const uid = pod.metadata?.uid ?? "";
    if ((options?.restarts ?? 0) > 0) {
      const old = this.#jobs.get(uid);
      // The ended job goes first, so that the plugin never holds two for the pod.
      if (this.#ended.has(uid)) await this.removeUnknown(pod, signal);
      this.#ended.delete(uid);
      const run = await this.#submit(pod, signal);
      this.#d.event(pod, "Normal", "Restarted", `job ${old} ended; new job ${run.handle?.jobId}`);
      return run;
    }
    const existing = await this.#d.api.status([pod], signal).catch((err) => {
      if (answered(err)) return []; // plugins answer an unknown pod with an error status
      this.#d.event(pod, "Warning", "InterlinkCreateFailed", (err as Error).message);
      throw err;
    });
    const mine = existing.find((s) => s.UID === uid);
    // Only a job ID or a container state proves a job: the SLURM plugin answers a pod it has no
    // job for with empty states (./client/wire.ts provesJob), which means "send /create".
    if (provesJob(mine)) {
      this.#creates.delete(uid);
      const jobId = mine!.JID ?? "";
      this.#jobs.set(uid, jobId);
      this.#d.log.info("adopted {pod}: the plugin already runs it as job {job}", {
        pod: podKeyOf(pod),
        job: jobId || "(no ID given)",
      });
      return this.#runOf(pod, { jobId, remote: mine, seen: true });
    }
    if (!mine && ranBefore(pod)) this.#awaitSighting(pod);
    return await this.#createOnce(pod, signal);
  }

  /** Deletes the pod's job (a finished one too: the plugin keeps its state and logs until then). */
  async remove(pod: Pod, signal?: AbortSignal): Promise<void> {
    await this.#delete(pod, signal);
    this.#creates.delete(pod.metadata?.uid ?? "");
    this.#jobs.delete(pod.metadata?.uid ?? "");
    this.#ended.delete(pod.metadata?.uid ?? "");
  }

  /**
   * An ended job is deleted only when the next is made ({@link make}): until then the plugin
   * keeps its logs, which `kubectl logs` shows through the back-off. A lost job has none.
   */
  discard(pod: Pod, run: RemoteRun<Job>): Promise<void> {
    if (!run.handle?.lost) this.#ended.add(pod.metadata?.uid ?? "");
    return Promise.resolve();
  }

  /**
   * Not adopted: a plugin that cannot list its jobs (the SLURM plugin answers a /status of no
   * pods with its resources, pkg/slurm/Status.go:107-131) may still run it for an earlier
   * vkubelet. The plugin is told; one that has no such job answers an error.
   */
  async removeUnknown(pod: Pod, signal?: AbortSignal): Promise<void> {
    await this.#d.api.delete(pod, signal).catch((err) => {
      if (!answered(err)) throw err;
    });
  }

  /**
   * A pod that ran before (a restarted vkubelet) and that the answer left out: the SLURM plugin
   * answers from a copy made for an earlier call's pods (pkg/slurm/Status.go:133, 480-485), so
   * leaving it out proves nothing. Asked again (a TransientError) until an answer names it, for
   * up to `statusCacheWindow`; /create then goes (the plugin holds no job it would not report).
   */
  #awaitSighting(pod: Pod): void {
    const now = this.#d.clock.now();
    const tries = this.#triesOf(pod);
    tries.unseenSinceMs ??= now;
    const waited = now - tries.unseenSinceMs;
    const window = this.#d.config.statusCacheWindow;
    if (waited <= window) {
      throw new TransientError(
        `pod ${
          podKeyOf(pod)
        } ran before but the plugin's /status answer leaves it out; asking again for ${
          window - waited
        } ms more before creating it anew`,
      );
    }
  }

  /**
   * POST /create, once the plugin is known to hold no job for the pod. After a create that timed
   * out the plugin may still make the job: it is adopted when `/status` shows it; /create goes
   * again only after `statusCacheWindow` without it, and after a /delete that cancels a job the
   * late create made, so the pod never has two. Refusals (an empty 200, an error status, an
   * error in JSON) fail the pod after `createAttempts`, as interLink's virtual kubelet marks a
   * pod it cannot create Failed (interlink-hq/interLink 9ed14a4e,
   * pkg/virtualkubelet/execute.go:772-781) — never ContainerCreating for ever.
   */
  async #createOnce(pod: Pod, signal?: AbortSignal): Promise<RemoteRun<Job>> {
    const uid = pod.metadata?.uid ?? "";
    const tries = this.#triesOf(pod);
    const window = this.#d.config.statusCacheWindow;
    if (tries.timedOutAtMs !== undefined) {
      const waited = this.#d.clock.now() - tries.timedOutAtMs;
      if (waited <= window) {
        throw new TransientError(
          `the last create of pod ${podKeyOf(pod)} timed out; waiting ${
            window - waited
          } ms more for its job to show in /status before sending it again`,
        );
      }
      await this.removeUnknown(pod, signal);
      tries.timedOutAtMs = undefined;
    }
    try {
      const run = await this.#submit(pod, signal);
      this.#creates.delete(uid);
      return run;
    } catch (err) {
      if (timedOut(err)) tries.timedOutAtMs = this.#d.clock.now();
      else if (refused(err)) tries.refused++;
      const message = (err as Error).message;
      this.#d.event(pod, "Warning", "InterlinkCreateFailed", message);
      if (tries.refused >= this.#d.config.createAttempts) {
        this.#creates.delete(uid);
        throw new InvalidInputError(
          `the plugin refused to create the pod ${tries.refused} times (createAttempts); the last answer: ${message}`,
          { cause: err },
        );
      }
      throw err;
    }
  }

  #triesOf(pod: Pod): CreateTries {
    const uid = pod.metadata?.uid ?? "";
    const tries = this.#creates.get(uid) ?? { refused: 0 };
    this.#creates.set(uid, tries);
    return tries;
  }

  /** POST /create for the pod; its run follows that job. */
  async #submit(pod: Pod, signal?: AbortSignal): Promise<RemoteRun<Job>> {
    const { status: _, ...slim } = downwardAsProjected(pod);
    const objects = await podObjects(slim, this.#d.kube, {
      signal,
      tokenExpirationSeconds: this.#d.config.tokenExpirationSeconds,
    });
    const jobId = await this.#d.api.create(slim, objects, signal);
    this.#jobs.set(pod.metadata?.uid ?? "", jobId);
    return this.#runOf(pod, { jobId, seen: false });
  }

  /** /delete; a plugin that answers (404, 500 "no such job") no longer runs it. */
  async #delete(pod: Pod, signal?: AbortSignal): Promise<void> {
    await this.#d.api.delete(pod, signal).catch((err) => {
      if (!answered(err)) throw err;
      this.#d.log.info("delete of {pod}: {err}", { pod: podKeyOf(pod), err: String(err) });
    });
  }

  #runOf(pod: Pod, job: Job): RemoteRun<Job> {
    return runOf(pod, job, this.#d.clock.now(), this.#d.hostIP);
  }
}

/** The pod's status says a kubelet ran its containers (a vkubelet before this one). */
function ranBefore(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return phase === "Running" || phase === "Succeeded" || phase === "Failed" ||
    (pod.status?.containerStatuses ?? []).some((s) => s.state?.running || s.state?.terminated);
}

/** The plugin answered the create with a refusal (as opposed to not answering in time). */
function refused(err: unknown): boolean {
  return answered(err) || err instanceof CreateRefusedError ||
    (err instanceof Error && err.cause instanceof SyntaxError);
}
