/**
 * The interlink provider: each pod bound to the virtual node becomes one job of an interLink
 * plugin (SLURM, HTCondor, Docker, apptainer...), through interLink's API server
 * (`target: interlink`) or the plugin itself (`target: plugin`). `createPod` first asks `/status`
 * whether the plugin already runs the pod (a restarted vkubelet, a retried create) and adopts it;
 * otherwise it POSTs `/create` with what the pod's volumes refer to. A status loop
 * (`./supervisor.ts`) polls all jobs in one call and applies the restart policy; the node is
 * Ready while the ping answers. Exec, attach and port-forward have no interLink API.
 * @module
 */
import type { Node, Pod } from "kubernetes-types/core/v1.d.ts";
import {
  applyProviderNode,
  backendUnreachable,
  type CallOptions,
  type ContainerLogOptions,
  type ContainerRef,
  InvalidInputError,
  NotFoundError,
  type PodRef,
  type Provider,
  type ProviderDeps,
  refuseStreaming,
  terminalPodStatus,
  TransientError,
} from "../../provider/mod.ts";
import { InterlinkApi } from "./api.ts";
import { answered, InterlinkClient, timedOut } from "./client.ts";
import type { InterlinkConfig } from "./config.ts";
import { type PodEventSink, podEventSink, podKeyOf, PodTable } from "../../provider/mod.ts";
import { readLog } from "./logs.ts";
import { type PodRecord, podStatusOf } from "./status.ts";
import { StatusSupervisor } from "./supervisor.ts";
import { nodeFieldsOf } from "./node.ts";
import { downwardAsProjected, podObjects } from "./volumes.ts";
import { CreateRefusedError, type PingResponse, provesJob } from "./wire.ts";

/** Runs the virtual node's pods as interLink jobs; see the module doc. */
export class InterlinkProvider implements Provider {
  readonly #config: InterlinkConfig;
  readonly #deps: ProviderDeps;
  readonly #client: InterlinkClient;
  readonly #api: InterlinkApi;
  readonly #pods: PodTable<PodRecord>;
  readonly #nodeCallbacks = new Set<() => void>();
  readonly #event: PodEventSink;
  readonly #supervisor: StatusSupervisor;
  readonly #stop = new AbortController();
  readonly #running: Promise<void>;
  #ping?: PingResponse;
  /** Creates that failed, by pod UID: refusals so far, and when the last one timed out. */
  readonly #creates = new Map<
    string,
    { refused: number; timedOutAtMs?: number; unseenSinceMs?: number }
  >();

  constructor(config: InterlinkConfig, deps: ProviderDeps) {
    this.#config = config;
    this.#deps = deps;
    this.#client = new InterlinkClient(config, { log: deps.log, nodeName: deps.nodeName });
    this.#api = new InterlinkApi(this.#client, config);
    this.#event = podEventSink(deps, "vkubelet-interlink");
    const signal = AbortSignal.any([deps.signal, this.#stop.signal]);
    this.#pods = new PodTable<PodRecord>({
      // A deleted pod's terminal status is made by #remove, from the plugin's last answer.
      statusOf: (record) => podStatusOf(record, deps.clock.now(), deps.internalIp),
      log: deps.log,
    });
    this.#supervisor = new StatusSupervisor({
      api: this.#api,
      records: this.#pods.records,
      nodeName: deps.nodeName,
      clock: deps.clock,
      log: deps.log,
      intervalMs: config.statusInterval,
      statusCacheWindowMs: config.statusCacheWindow,
      event: this.#event,
      discover: config.target === "plugin",
      start: (record, s) => this.#submit(record, s),
      changed: (record) => this.#pods.notify(record),
    });
    this.#pods.holdUntil(this.#supervisor.adopted);
    this.#running = this.#supervisor.run(signal);
  }

  async createPod(pod: Pod, options: CallOptions): Promise<void> {
    await this.#pods.adopted(options.signal);
    const k = podKeyOf(pod);
    const known = this.#pods.records.get(k);
    if (known && known.pod.metadata?.uid !== pod.metadata?.uid) {
      // An older pod of the same name: its job must not stand for this one.
      await this.#remove(known, options.signal);
    } else if (known) {
      known.pod = { ...structuredClone(pod), status: known.pod.status };
      this.#pods.notify(known);
      return;
    }
    const record: PodRecord = {
      pod: structuredClone(pod),
      restarts: 0,
      lastTerminated: new Map(),
      startTimeMs: this.#deps.clock.now(),
    };
    // A pod the plugin already runs (a restarted vkubelet, a create whose answer was lost).
    const existing = await this.#api.status([pod], options.signal).catch((err) => {
      if (answered(err)) return []; // plugins answer an unknown pod with an error status
      this.#event(pod, "Warning", "InterlinkCreateFailed", (err as Error).message);
      throw err;
    });
    const uid = pod.metadata?.uid ?? "";
    const mine = existing.find((s) => s.UID === uid);
    // Only a job ID or a container state proves a job: the SLURM plugin answers a pod it has no
    // job for with empty states (./wire.ts provesJob), which means "send /create".
    if (provesJob(mine)) {
      record.jobId = mine!.JID ?? "";
      record.remote = mine;
      record.seen = true;
      this.#creates.delete(uid);
      this.#pods.records.set(k, record);
      this.#deps.log.info("adopted {pod}: the plugin already runs it as job {job}", {
        pod: k,
        job: record.jobId || "(no ID given)",
      });
      this.#pods.notify(record);
      return;
    }
    if (!mine && ranBefore(pod)) this.#awaitSighting(pod);
    await this.#createOnce(record, options.signal);
    this.#pods.records.set(k, record);
    this.#pods.notify(record);
  }

  /**
   * A pod that ran before (a restarted vkubelet) and that the answer left out: the SLURM plugin
   * answers from a copy made for an earlier call's pods (pkg/slurm/Status.go:133, 480-485), so
   * leaving it out proves nothing. Asked again (a TransientError) until an answer names it, for
   * up to `statusCacheWindow`; /create then goes (the plugin holds no job it would not report).
   */
  #awaitSighting(pod: Pod): void {
    const uid = pod.metadata?.uid ?? "";
    const now = this.#deps.clock.now();
    const tries = this.#creates.get(uid) ?? { refused: 0 };
    this.#creates.set(uid, tries);
    tries.unseenSinceMs ??= now;
    const waited = now - tries.unseenSinceMs;
    if (waited <= this.#config.statusCacheWindow) {
      throw new TransientError(
        `pod ${
          podKeyOf(pod)
        } ran before but the plugin's /status answer leaves it out; asking again for ${
          this.#config.statusCacheWindow - waited
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
  async #createOnce(record: PodRecord, signal?: AbortSignal): Promise<void> {
    const pod = record.pod;
    const uid = pod.metadata?.uid ?? "";
    const now = this.#deps.clock.now();
    const tries = this.#creates.get(uid) ?? { refused: 0 };
    this.#creates.set(uid, tries);
    if (tries.timedOutAtMs !== undefined) {
      const waited = now - tries.timedOutAtMs;
      if (waited <= this.#config.statusCacheWindow) {
        throw new TransientError(
          `the last create of pod ${podKeyOf(pod)} timed out; waiting ${
            this.#config.statusCacheWindow - waited
          } ms more for its job to show in /status before sending it again`,
        );
      }
      await this.#api.delete(pod, signal).catch((err) => {
        if (!answered(err)) throw err;
      });
      tries.timedOutAtMs = undefined;
    }
    try {
      await this.#submit(record, signal);
      this.#creates.delete(uid);
    } catch (err) {
      if (timedOut(err)) tries.timedOutAtMs = this.#deps.clock.now();
      else if (refused(err)) tries.refused++;
      const message = (err as Error).message;
      this.#event(pod, "Warning", "InterlinkCreateFailed", message);
      if (tries.refused >= this.#config.createAttempts) {
        this.#creates.delete(uid);
        throw new InvalidInputError(
          `the plugin refused to create the pod ${tries.refused} times (createAttempts); the last answer: ${message}`,
          { cause: err },
        );
      }
      throw err;
    }
  }

  updatePod(pod: Pod, _options: CallOptions): Promise<void> {
    // A job cannot change; labels and annotations are taken over for the API's copy.
    const record = this.#pods.get(pod.metadata?.namespace, pod.metadata?.name);
    if (record && record.pod.metadata?.uid === pod.metadata?.uid) {
      record.pod = { ...structuredClone(pod), status: record.pod.status };
      this.#pods.notify(record);
    }
    return Promise.resolve();
  }

  async deletePod(pod: Pod, options: CallOptions): Promise<void> {
    const record = await this.#pods.ofPod(pod, options.signal);
    if (record) return await this.#remove(record, options.signal);
    // Not adopted (yet): a plugin that cannot list its jobs (the SLURM plugin answers a /status
    // of no pods with its resources, pkg/slurm/Status.go:107-131) may still run it for an
    // earlier vkubelet. The plugin is told; one that has no such job answers an error.
    await this.#api.delete(pod, options.signal).catch((err) => {
      if (!answered(err)) throw err;
    });
  }

  getPod(namespace: string, name: string, _options: CallOptions): Promise<Pod | undefined> {
    return this.#pods.getPod(namespace, name);
  }

  listPods(options: CallOptions): Promise<Pod[]> {
    return this.#pods.listPods(options.signal);
  }

  notifyPods(callback: (pod: Pod) => void): () => void {
    return this.#pods.subscribe(callback);
  }

  configureNode(node: Node): void {
    applyProviderNode(node, nodeFieldsOf(this.#config, this.#ping), this.#deps);
  }

  notifyNodeChanged(callback: () => void): void {
    this.#nodeCallbacks.add(callback);
  }

  async ping(options: CallOptions): Promise<void> {
    // The client's messages name the endpoint and the fix, redacted already.
    const answer = await this.#api.ping(options.signal).catch((err) => {
      throw backendUnreachable(this.#client.endpoint, err, { reason: "InterlinkUnreachable" });
    });
    const before = JSON.stringify(nodeFieldsOf(this.#config, this.#ping));
    this.#ping = answer;
    if (JSON.stringify(nodeFieldsOf(this.#config, answer)) !== before) {
      for (const callback of this.#nodeCallbacks) callback();
    }
  }

  getContainerLogs(
    ref: ContainerRef,
    options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    return settle(() => {
      const record = this.#known(ref.namespace, ref.pod, ref.container);
      return readLog({
        api: this.#api,
        namespace: ref.namespace,
        pod: ref.pod,
        uid: record.pod.metadata?.uid ?? "",
        container: ref.container,
        now: () => this.#deps.clock.now(),
        sleep: (ms, signal) => this.#deps.clock.sleep(ms, signal),
        pollMs: 1000,
        interlink: this.#config.target === "interlink",
        maxBytes: this.#config.maxResponseBytes,
      }, options);
    });
  }

  runInContainer(ref: ContainerRef): Promise<number> {
    return refuseStreaming(
      "exec",
      "interLink's API has no exec call",
      () => this.#known(ref.namespace, ref.pod, ref.container),
    );
  }

  attachToContainer(ref: ContainerRef): Promise<void> {
    return refuseStreaming(
      "attach",
      "interLink's API has no attach call",
      () => this.#known(ref.namespace, ref.pod, ref.container),
    );
  }

  portForward(ref: PodRef): Promise<void> {
    return refuseStreaming(
      "portForward",
      "interLink's API has no port-forward call",
      () => this.#known(ref.namespace, ref.name),
    );
  }

  async close(): Promise<void> {
    this.#stop.abort();
    await this.#running;
    this.#client.close();
  }

  /** POST /create for the record's pod; the record then follows that job. */
  async #submit(record: PodRecord, signal?: AbortSignal): Promise<void> {
    const { status: _, ...pod } = downwardAsProjected(record.pod);
    const objects = await podObjects(pod, this.#deps.kube, {
      signal,
      tokenExpirationSeconds: this.#config.tokenExpirationSeconds,
    });
    record.jobId = await this.#api.create(pod, objects, signal);
    record.waiting = undefined;
    record.seen = false;
    record.missing = undefined;
  }

  /** Deletes the pod's job, reports it terminated and forgets it. */
  async #remove(record: PodRecord, signal?: AbortSignal): Promise<void> {
    // A finished job is deleted too: the plugin keeps its state and logs until then.
    await this.#api.delete(record.pod, signal).catch((err) => {
      // A plugin that answers (404, 500 "no such job") no longer runs it; no answer is retried.
      if (!answered(err)) throw err;
      this.#deps.log.info("delete of {pod}: {err}", {
        pod: podKeyOf(record.pod),
        err: String(err),
      });
    });
    const now = this.#deps.clock.now();
    const current = podStatusOf(record, now, this.#deps.internalIp);
    const status = terminalPodStatus(record.pod, current, { nowMs: now });
    this.#pods.send({ apiVersion: "v1", kind: "Pod", ...record.pod, status });
    this.#pods.forget(record);
  }

  /** The record of a pod (and container) on this node, or {@link NotFoundError}. */
  #known(namespace: string, pod: string, container?: string): PodRecord {
    const record = this.#pods.get(namespace, pod);
    if (!record) throw new NotFoundError(`pod ${namespace}/${pod} is not on this node`);
    const spec = record.pod.spec;
    const names = [...spec?.containers ?? [], ...spec?.initContainers ?? []].map((c) => c.name);
    if (container !== undefined && !names.includes(container)) {
      throw new NotFoundError(`pod ${namespace}/${pod} has no container ${container}`);
    }
    return record;
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

/** `work()` as a promise: its value, or its exception as a rejection. */
function settle<T>(work: () => T | Promise<T>): Promise<T> {
  try {
    return Promise.resolve(work());
  } catch (err) {
    return Promise.reject(err);
  }
}
