/**
 * The mock provider: pods live in memory and are Running the moment they are created. Unlike
 * virtual-kubelet's mock (virtual-kubelet/virtual-kubelet cmd/virtual-kubelet/internal/provider/
 * mock/mock.go: fixed IPs, empty logs, no-op exec) it hands out loopback pod IPs, writes logs,
 * runs a few commands, echoes port-forwards and reports steady non-zero usage, so that demos,
 * conformance tests and benchmarks see a kubelet-like node.
 * @module
 */
import type { Node, Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import {
  type AttachOptions,
  type CallOptions,
  type ContainerLogOptions,
  type ContainerRef,
  type ExecOptions,
  InvalidInputError,
  isSidecar,
  isTerminalPhase,
  NotFoundError,
  podKey,
  podKeyOf,
  type PodRef,
  type PortForwardOptions,
  type Provider,
  type ProviderDeps,
  quantityToNumber,
  type StatsSummary,
  terminalPodStatus,
  TransientError,
} from "../../provider/mod.ts";
import { IpPool, parseLoopbackCidr } from "./cidr.ts";
import type { MockConfig } from "./config.ts";
import { attachMock, runMockCommand } from "./exec.ts";
import { containerLogStream } from "./logs.ts";
import { type ContainerRun, currentStatus, isRunning, longRunningContainers } from "./status.ts";
import {
  EXIT_ANNOTATION,
  parseHooks,
  playExits,
  START_ERROR_ANNOTATION,
  startErrorRun,
} from "./hooks.ts";
import { cpuNanoSeconds, metricsText, statsSummary, type Usage } from "./stats.ts";
import { configureMockNode } from "./node.ts";
import { frozenPod } from "./frozen.ts";
import { writtenStarts } from "./written_starts.ts";

/** Annotations a pod can carry to steer the mock (deterministic hooks for tests). */
export const ANNOTATIONS = {
  /** `invalid` or `transient`: createPod throws InvalidInputError / TransientError. */
  createError: "mock.vkubelet.io/create-error",
  /** `cpu=250m,memory=64Mi`: usage of each container of the pod instead of the config's. */
  usage: "mock.vkubelet.io/usage",
  /** `web=3` or `web=3@2s`: container `web` exits with code 3 (2 s after each start); see hooks.ts. */
  exit: EXIT_ANNOTATION,
  /** `web` or `web=MESSAGE`: container `web` waits in CreateContainerError; see hooks.ts. */
  startError: START_ERROR_ANNOTATION,
} as const;

/** One pod the mock runs. */
export interface MockPod {
  pod: Pod;
  podIp: string;
  startMs: number;
  runs: Map<string, ContainerRun>;
  usage: Usage;
  /** Aborts when the pod is deleted: follow streams and exec sessions end. */
  stopped: AbortController;
}

/** The in-memory provider; see the module doc. */
export class MockProvider implements Provider {
  /**
   * A new leader's mock takes running pods from their written status (pod IP, start times:
   * see written_starts.ts), so a takeover restarts nothing.
   */
  readonly highAvailability = true;
  readonly #config: MockConfig;
  readonly #deps: ProviderDeps;
  readonly #pods = new Map<string, MockPod>();
  readonly #ips: IpPool;
  /** Pod IPs held for running pods (by uid) from `resume` until their createPod. */
  readonly #reserved = new Map<string, string>();
  readonly #podCallbacks = new Set<(pod: Pod) => void>();
  readonly #startMs: number;
  /** Exit scripts in progress (see hooks.ts), awaited by close. */
  readonly #scripts = new Set<Promise<void>>();
  #defaultUsage?: Usage;
  #retiredCpuNs = 0;
  #pingError?: Error;

  constructor(config: MockConfig, deps: ProviderDeps) {
    this.#config = config;
    this.#deps = deps;
    const cidr = parseLoopbackCidr(config.podCIDR);
    if (typeof cidr === "string") throw new InvalidInputError(`podCIDR: ${cidr}`);
    this.#ips = new IpPool(cidr);
    this.#startMs = deps.clock.now();
  }

  /**
   * `--leader-elect`: a new term. Holds the IP of every Running pod this mock does not run yet,
   * so that a pod bound during the takeover, created first, cannot take an IP a running pod
   * still has; createPod then takes it back (written_starts.ts keeps the start times).
   */
  resume(pods: readonly Pod[]): void {
    for (const pod of pods) {
      const { namespace, name, uid } = pod.metadata ?? {};
      const ip = pod.status?.phase === "Running" ? pod.status.podIP : undefined;
      if (!uid || !ip || this.#pods.get(podKey(namespace, name))?.pod.metadata?.uid === uid) {
        continue;
      }
      if (this.#ips.claim(ip)) this.#reserved.set(uid, ip);
    }
  }

  /** `--leader-elect`: the term ended; IPs held for pods never created are free again. */
  standby(): void {
    for (const ip of this.#reserved.values()) this.#ips.release(ip);
    this.#reserved.clear();
  }

  /** Makes {@link ping} fail with `error` (or succeed again with `undefined`); for tests. */
  setPingError(error: Error | undefined): void {
    this.#pingError = error;
  }

  /** Pods, for assertions in tests: the mock's own record, not a copy. */
  get pods(): ReadonlyMap<string, MockPod> {
    return this.#pods;
  }

  async createPod(pod: Pod, options: CallOptions): Promise<void> {
    options.signal?.throwIfAborted();
    const { namespace, name, uid } = pod.metadata ?? {};
    if (!namespace || !name) throw new InvalidInputError("pod has no namespace or name");
    const nodeName = pod.spec?.nodeName;
    if (nodeName && nodeName !== this.#deps.nodeName) {
      throw new InvalidInputError(
        `pod ${namespace}/${name} is bound to node ${nodeName}, not ${this.#deps.nodeName}`,
      );
    }
    const hook = pod.metadata?.annotations?.[ANNOTATIONS.createError];
    if (hook === "invalid") throw new InvalidInputError(`${ANNOTATIONS.createError}: invalid`);
    if (hook === "transient") throw new TransientError(`${ANNOTATIONS.createError}: transient`);
    const existing = this.#pods.get(podKey(namespace, name));
    if (existing && existing.pod.metadata?.uid === uid) return;
    if (existing) this.#remove(existing);
    const usage = this.#usageOf(pod);
    const hooks = parseHooks(pod);
    // An IP resume() held for this pod goes back to the pool, to be taken again just below.
    const reserved = uid ? this.#reserved.get(uid) : undefined;
    if (reserved) this.#ips.release(reserved);
    this.#reserved.delete(uid ?? "");
    let podIp: string;
    try {
      podIp = this.#ips.allocate({ uid, previous: pod.status?.podIP });
    } catch (err) {
      throw new TransientError(`no pod IP left for ${namespace}/${name}`, { cause: err });
    }
    const now = this.#deps.clock.now();
    // A pod that ran before a restart keeps the times its written status holds.
    const written = writtenStarts(pod);
    const runs = new Map<string, ContainerRun>();
    for (const c of longRunningContainers(pod)) {
      const startError = hooks.startErrors.get(c.name);
      const before = written.containers.get(c.name);
      runs.set(
        c.name,
        startError === undefined
          ? {
            startedAtMs: before?.startedAtMs ?? now,
            restartCount: before?.restartCount ?? 0,
            image: c.image ?? "",
          }
          : startErrorRun(c.image ?? "", now, startError),
      );
    }
    const record: MockPod = {
      // Kept as given (see Provider.createPod): its parts are the informer's own. #refresh
      // below replaces it with the frozen record before anyone else sees it.
      pod,
      podIp,
      startMs: written.podStartMs ?? now,
      runs,
      usage,
      stopped: new AbortController(),
    };
    this.#pods.set(podKey(namespace, name), record);
    this.#refresh(record);
    if (hooks.exits.size > 0) {
      const script = playExits(hooks, {
        pod: record.pod,
        clock: this.#deps.clock,
        signal: record.stopped.signal,
        run: (container) => record.runs.get(container),
        setRun: (container, run) => this.#setRun(record, container, run),
      });
      this.#scripts.add(script);
      script.finally(() => this.#scripts.delete(script));
    }
    await Promise.resolve();
  }

  async updatePod(pod: Pod, options: CallOptions): Promise<void> {
    options.signal?.throwIfAborted();
    const record = this.#get(pod.metadata?.namespace, pod.metadata?.name);
    const now = this.#deps.clock.now();
    for (const c of longRunningContainers(pod)) {
      const run = record.runs.get(c.name);
      if (run && run.image !== c.image) {
        // A new image restarts the container, as the kubelet does.
        this.#retire(record, run, now);
        record.runs.set(c.name, {
          startedAtMs: now,
          restartCount: run.restartCount + 1,
          image: c.image ?? "",
        });
      }
    }
    record.pod = frozenPod(pod, record.pod.status);
    this.#refresh(record);
    await Promise.resolve();
  }

  /** Starts an ephemeral container (`kubectl debug`) like a regular one, without restarts. */
  async runEphemeralContainer(pod: Pod, name: string, options: CallOptions): Promise<void> {
    options.signal?.throwIfAborted();
    const record = this.#get(pod.metadata?.namespace, pod.metadata?.name);
    const container = pod.spec?.ephemeralContainers?.find((c) => c.name === name);
    if (!container) {
      throw new InvalidInputError(
        `pod ${podKeyOf(pod)} has no ephemeral container ${name}`,
      );
    }
    record.pod = frozenPod(pod, record.pod.status);
    if (!record.runs.has(name)) {
      record.runs.set(name, {
        startedAtMs: this.#deps.clock.now(),
        restartCount: 0,
        image: container.image ?? "",
      });
    }
    this.#refresh(record);
    await Promise.resolve();
  }

  async deletePod(pod: Pod, options: CallOptions): Promise<void> {
    options.signal?.throwIfAborted();
    const record = this.#get(pod.metadata?.namespace, pod.metadata?.name);
    const now = this.#deps.clock.now();
    record.pod = frozenPod(
      record.pod,
      terminalPodStatus(record.pod, record.pod.status, { nowMs: now }),
      pod.metadata ?? record.pod.metadata,
    );
    this.#notify(record.pod);
    this.#remove(record);
    await Promise.resolve();
  }

  getPod(namespace: string, name: string, options: CallOptions): Promise<Pod | undefined> {
    return attempt(() => {
      options.signal?.throwIfAborted();
      const record = this.#pods.get(podKey(namespace, name));
      return record ? structuredClone(record.pod) : undefined;
    });
  }

  listPods(options: CallOptions): Promise<Pod[]> {
    return attempt(() => {
      options.signal?.throwIfAborted();
      const mine = [...this.#pods.values()].filter((r) =>
        (r.pod.spec?.nodeName ?? this.#deps.nodeName) === this.#deps.nodeName
      );
      // Frozen (see frozen.ts), so no copy is needed.
      return mine.map((r) => r.pod);
    });
  }

  notifyPods(callback: (pod: Pod) => void): () => void {
    this.#podCallbacks.add(callback);
    return () => void this.#podCallbacks.delete(callback);
  }

  getPodStatus(
    namespace: string,
    name: string,
    options: CallOptions,
  ): Promise<PodStatus | undefined> {
    return attempt(() => {
      options.signal?.throwIfAborted();
      const status = this.#pods.get(podKey(namespace, name))?.pod.status;
      return status ? structuredClone(status) : undefined;
    });
  }

  configureNode(node: Node): void {
    configureMockNode(node, this.#config, this.#deps);
  }

  ping(options: CallOptions): Promise<void> {
    return attempt(() => {
      options.signal?.throwIfAborted();
      if (this.#pingError) throw this.#pingError;
    });
  }

  getContainerLogs(
    ref: ContainerRef,
    options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    return attempt(() => {
      const record = this.#get(ref.namespace, ref.pod);
      const run = this.#run(record, ref);
      if (run.waiting && !run.previous && !options.previous) {
        // The kubelet's answer for a container that never started (kuberuntime logs).
        throw new InvalidInputError(
          `container "${ref.container}" in pod "${ref.pod}" is waiting to start: ${run.waiting.reason}`,
        );
      }
      return containerLogStream({
        pod: record.pod,
        container: ref.container,
        run,
        clock: this.#deps.clock,
        followIntervalMs: this.#config.followInterval,
        stopped: record.stopped.signal,
      }, options);
    });
  }

  async runInContainer(ref: ContainerRef, options: ExecOptions): Promise<number> {
    await Promise.resolve(); // errors below reject rather than throw
    const record = this.#get(ref.namespace, ref.pod);
    const container = this.#container(record, ref);
    const signal = AbortSignal.any([
      record.stopped.signal,
      options.signal ?? new AbortController().signal,
    ]);
    return await runMockCommand({ ...options, signal }, {
      pod: record.pod,
      container,
      clock: this.#deps.clock,
    });
  }

  async attachToContainer(ref: ContainerRef, options: AttachOptions): Promise<void> {
    await Promise.resolve(); // errors below reject rather than throw
    const record = this.#get(ref.namespace, ref.pod);
    this.#run(record, ref);
    const signal = AbortSignal.any([
      record.stopped.signal,
      options.signal ?? new AbortController().signal,
    ]);
    return await attachMock({ ...options, signal }, ref);
  }

  async portForward(ref: PodRef, options: PortForwardOptions): Promise<void> {
    this.#get(ref.namespace, ref.name);
    if (!Number.isInteger(options.port) || options.port < 1 || options.port > 65535) {
      throw new InvalidInputError(`port ${options.port} is not a TCP port number (1-65535)`);
    }
    // Every port of a mock pod is an echo server.
    await options.stream.readable.pipeTo(options.stream.writable, { signal: options.signal });
  }

  getStatsSummary(options: CallOptions): Promise<StatsSummary> {
    return attempt(() => {
      options.signal?.throwIfAborted();
      return this.#summary();
    });
  }

  getMetricsResource(options: CallOptions): Promise<string> {
    return attempt(() => {
      options.signal?.throwIfAborted();
      return metricsText(this.#summary());
    });
  }

  async close(): Promise<void> {
    for (const record of this.#pods.values()) record.stopped.abort(new Error("provider closed"));
    await Promise.all(this.#scripts);
  }

  #summary(): StatsSummary {
    const memory = quantityToNumber(this.#config.capacity.memory ?? "0") ?? 0;
    return statsSummary({
      nodeName: this.#deps.nodeName,
      nowMs: this.#deps.clock.now(),
      startMs: this.#startMs,
      nodeUsage: usageFrom(this.#config.nodeUsage),
      memoryCapacityBytes: memory,
      retiredCpuNs: this.#retiredCpuNs,
      pods: [...this.#pods.values()],
    });
  }

  #usageOf(pod: Pod): Usage {
    const text = pod.metadata?.annotations?.[ANNOTATIONS.usage];
    // One object for every pod without the annotation (read-only, like the records).
    if (text === undefined) return this.#defaultUsage ??= usageFrom(this.#config.usage);
    const fields = Object.fromEntries(
      text.split(",").map((part) => part.split("=").map((s) => s.trim())),
    );
    const cpu = quantityToNumber(fields.cpu ?? "");
    const memory = quantityToNumber(fields.memory ?? "");
    if (!cpu || !memory || cpu <= 0 || memory <= 0) {
      throw new InvalidInputError(
        `annotation ${ANNOTATIONS.usage}: expected cpu=QUANTITY,memory=QUANTITY above zero, got ${
          JSON.stringify(text)
        }`,
      );
    }
    return { nanoCores: Math.round(cpu * 1e9), bytes: Math.round(memory) };
  }

  #get(namespace: string | undefined, name: string | undefined): MockPod {
    const record = this.#pods.get(podKey(namespace, name));
    if (!record) {
      throw new NotFoundError(`pod ${podKey(namespace, name)} is not running on this node`);
    }
    return record;
  }

  #container(record: MockPod, ref: ContainerRef) {
    const all = [
      ...(record.pod.spec?.initContainers ?? []),
      ...(record.pod.spec?.containers ?? []),
      ...(record.pod.spec?.ephemeralContainers ?? []),
    ];
    const container = all.find((c) => c.name === ref.container);
    if (!container) {
      throw new NotFoundError(
        `container ${ref.container} is not in pod ${ref.namespace}/${ref.pod}`,
      );
    }
    return container;
  }

  #run(record: MockPod, ref: ContainerRef): ContainerRun {
    const container = this.#container(record, ref);
    return record.runs.get(container.name) ??
      { startedAtMs: record.startMs, restartCount: 0, image: container.image ?? "" };
  }

  /**
   * Replaces a container's run (an exit script moved it on) and reports the status; once the
   * pod has finished, its sidecars stop too and the scripts end.
   */
  #setRun(record: MockPod, container: string, run: ContainerRun): void {
    if (this.#pods.get(podKeyOf(record.pod)) !== record) {
      return; // deleted or replaced meanwhile
    }
    const now = this.#deps.clock.now();
    const before = record.runs.get(container);
    if (before && (before.startedAtMs !== run.startedAtMs || !isRunning(run))) {
      this.#retire(record, before, now);
    }
    record.runs.set(container, run);
    // Running sidecars keep a pod Running; the kubelet stops them once the regular containers
    // are done for good (kuberuntime_manager.go computePodActions). Done for good: the phase
    // with the sidecars stopped is terminal.
    const stopped = new Map(record.runs);
    for (const c of (record.pod.spec?.initContainers ?? []).filter(isSidecar)) {
      const sidecar = stopped.get(c.name);
      if (sidecar && isRunning(sidecar)) {
        stopped.set(c.name, { ...sidecar, exited: { exitCode: 0, finishedAtMs: now } });
      }
    }
    const finished = isTerminalPhase(this.#status({ ...record, runs: stopped }).phase);
    if (finished) {
      for (const run of record.runs.values()) this.#retire(record, run, now);
      record.runs = stopped;
    }
    this.#refresh(record);
    if (finished) record.stopped.abort(new Error("pod finished"));
  }

  /** Adds the CPU a run used to the node's total, once, when it stops running. */
  #retire(record: MockPod, run: ContainerRun, nowMs: number): void {
    if (isRunning(run)) this.#retiredCpuNs += cpuNanoSeconds(record.usage, run.startedAtMs, nowMs);
  }

  #status(record: MockPod): PodStatus {
    return currentStatus(record.pod, {
      nowMs: this.#deps.clock.now(),
      podStartMs: record.startMs,
      podIp: record.podIp,
      hostIp: this.#deps.internalIp,
      runs: record.runs,
    });
  }

  #refresh(record: MockPod): void {
    record.pod = frozenPod(record.pod, this.#status(record));
    this.#notify(record.pod);
  }

  #remove(record: MockPod): void {
    const now = this.#deps.clock.now();
    for (const run of record.runs.values()) this.#retire(record, run, now);
    record.stopped.abort(new Error("pod deleted"));
    this.#ips.release(record.podIp);
    this.#pods.delete(podKeyOf(record.pod));
  }

  #notify(pod: Pod): void {
    for (const callback of this.#podCallbacks) {
      try {
        callback(pod); // frozen
      } catch (err) {
        this.#deps.log.error("pod status callback failed", {
          pod: podKeyOf(pod),
          err,
        });
      }
    }
  }
}

/** Config usage (`cpu: 10m, memory: 16Mi`) as nanocores and bytes. */
function usageFrom(usage: { cpu: string; memory: string }): Usage {
  return {
    nanoCores: Math.round(quantityToNumber(usage.cpu)! * 1e9),
    bytes: Math.round(quantityToNumber(usage.memory)!),
  };
}

/** Runs `fn`, turning a synchronous throw into a rejected promise. */
function attempt<T>(fn: () => T): Promise<T> {
  return new Promise((resolve) => resolve(fn()));
}
