/**
 * The process provider: each container of a pod runs as a local process tree (./launch/launcher.ts)
 * managed by a {@link PodRunner}; state lives in `<stateDir>/pods/*` so that a restarted
 * vkubelet re-adopts what is running instead of starting it twice.
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
  NotFoundError,
  podKey,
  podKeyOf,
  type PodRef,
  type PortForwardOptions,
  type Provider,
  type ProviderDeps,
  type StatsSummary,
} from "../../provider/mod.ts";
import { join } from "node:path";
import type { CgroupSupport } from "./host/cgroups.ts";
import type { ProcessConfig } from "./config.ts";
import { attachSession } from "./streams/attach.ts";
import {
  allContainers,
  containerArgv,
  containerEnv,
  POD_IP_FIELD_PATHS,
} from "./launch/container_spec.ts";
import { runInteractive } from "./streams/exec.ts";
import { type HostUser, hostUser } from "./launch/identity.ts";
import { validateAction } from "./lifecycle/handlers.ts";
import { containerLogStream } from "./streams/log_reader.ts";
import { configureProcessNode, nodeCapacity } from "./node.ts";
import { PodRunner, type RunnerDeps } from "./lifecycle/pod_runner.ts";
import { forwardPort } from "./streams/port_forward.ts";
import { podOwnsPort, podPids } from "./streams/pod_ports.ts";
import { podDirName, PodPaths, type PodRecord, readRecords } from "./state/state.ts";
import { statsSummary, UsageSampler } from "./host/stats.ts";
import { metricsText } from "../../provider/mod.ts";
import { validateVolume, type VolumeSource } from "./volumes/volumes.ts";
import type { PodNetworks } from "./network/pod_network.ts";

/** What the provider found out about the host at start-up, and optional collaborators. */
export interface ProcessProviderOptions {
  mountNamespace: { ok: boolean; reason?: string };
  cgroups: CgroupSupport;
  volumeSource?: VolumeSource;
  /** vkubelet's uid and gid (default: this process's), which containers without runAsUser get. */
  hostUser?: HostUser;
  /** Pod networking by CNI (./network/pod_network.ts); absent: pods share the host's network. */
  network?: PodNetworks;
}

/** Runs pods as local processes; see the module doc. */
export class ProcessProvider implements Provider {
  readonly #config: ProcessConfig;
  readonly #deps: ProviderDeps;
  readonly #options: ProcessProviderOptions;
  readonly #runners = new Map<string, PodRunner>();
  readonly #callbacks = new Set<(pod: Pod) => void>();
  readonly #sampler = new UsageSampler();
  readonly #stopMarker = new TextEncoder().encode(
    `\u0000vkubelet-stop-${crypto.randomUUID()}\u0000`,
  );
  readonly #startMs: number;
  readonly #capacity: Record<string, string>;
  readonly #hostUser: HostUser;

  /** The pod IP is this provider's to give: env fieldRefs to it are resolved here. */
  readonly deferredFieldPaths: readonly string[] = POD_IP_FIELD_PATHS;

  constructor(config: ProcessConfig, deps: ProviderDeps, options: ProcessProviderOptions) {
    this.#config = config;
    this.#deps = deps;
    this.#options = options;
    this.#startMs = deps.clock.now();
    this.#capacity = nodeCapacity(config);
    this.#hostUser = options.hostUser ?? hostUser();
  }

  /** Re-adopts every pod recorded under the state directory. Call once, before use. */
  async restore(): Promise<void> {
    const records = await readRecords(this.#config.stateDir, (dir, err) => {
      this.#deps.log.warn("ignoring unreadable pod state in {dir}: {err}", { dir, err });
    });
    const network = this.#options.network;
    for (const { record } of records) {
      if (!network || !record.network || record.deleting) continue;
      const pids = Object.values(record.containers).flatMap((c) =>
        c.running ? [c.running.pid] : []
      );
      await network.adopt(record.pod, record.network, pids).catch((err) =>
        this.#deps.log.warn("pod {pod}: its network could not be adopted: {err}", {
          pod: podKeyOf(record.pod),
          err,
        })
      );
    }
    await network?.collectGarbage(records.map(({ record }) => record));
    // Log directories of pods deleted while vkubelet was away go, as the kubelet's do.
    const kept = new Set(records.map(({ record }) => record.pod.metadata?.uid ?? ""));
    await this.#deps.podLogs?.prune(kept).catch(() => {});
    for (const { dir, record } of records) {
      const runner = this.#runner(record, new PodPaths(dir));
      this.#runners.set(podKeyOf(record.pod), runner);
      runner.start();
    }
  }

  /** The pod's runner, for tests. */
  runnerOf(namespace: string, name: string): PodRunner | undefined {
    return this.#runners.get(podKey(namespace, name));
  }

  async createPod(pod: Pod, options: CallOptions): Promise<void> {
    options.signal?.throwIfAborted();
    const { namespace, name, uid } = pod.metadata ?? {};
    if (!namespace || !name) throw new InvalidInputError("pod has no namespace or name");
    const existing = this.#runners.get(podKey(namespace, name));
    if (existing?.record.pod.metadata?.uid === uid) return;
    this.#validate(pod);
    if (existing) await this.deletePod(existing.record.pod, options);
    const paths = new PodPaths(join(this.#config.stateDir, "pods", podDirName(pod)));
    await Deno.mkdir(paths.dir, { recursive: true, mode: 0o700 });
    const network = await this.#options.network?.setUp(pod, paths.dir).catch(async (err) => {
      await Deno.remove(paths.dir, { recursive: true }).catch(() => {});
      throw new Error(`failed to set up the pod's network (CNI): ${err.message}`, { cause: err });
    });
    const podIps = network?.ips.length
      ? network.ips
      : [this.#config.podIP ?? this.#deps.internalIp];
    const podIp = podIps[0];
    const record: PodRecord = {
      version: 1,
      // The pod IP in status is what containerEnv gives status.podIP fieldRefs.
      pod: {
        ...structuredClone(pod),
        status: { podIP: podIp, podIPs: podIps.map((ip) => ({ ip })) },
      },
      podIp,
      podIps,
      ...(network ? { network } : {}),
      startTimeMs: this.#deps.clock.now(),
      containers: {},
      initialized: (pod.spec?.initContainers ?? []).length === 0,
    };
    const runner = this.#runner(record, paths);
    this.#runners.set(podKey(namespace, name), runner);
    runner.start();
    this.#notify(runner);
  }

  async updatePod(pod: Pod, options: CallOptions): Promise<void> {
    options.signal?.throwIfAborted();
    await this.#get(pod.metadata?.namespace, pod.metadata?.name).update(pod);
  }

  /** Starts an ephemeral container: the runner starts it on its next pass, once. */
  async runEphemeralContainer(pod: Pod, name: string, options: CallOptions): Promise<void> {
    options.signal?.throwIfAborted();
    const runner = this.#get(pod.metadata?.namespace, pod.metadata?.name);
    if (!pod.spec?.ephemeralContainers?.some((c) => c.name === name)) {
      throw new InvalidInputError(`pod has no ephemeral container ${name}`);
    }
    await runner.update(pod);
  }

  async deletePod(pod: Pod, options: CallOptions): Promise<void> {
    options.signal?.throwIfAborted();
    const runner = this.#get(pod.metadata?.namespace, pod.metadata?.name);
    const seconds = pod.metadata?.deletionGracePeriodSeconds ??
      runner.record.pod.spec?.terminationGracePeriodSeconds ?? 30;
    if (pod.metadata) runner.record.pod.metadata = structuredClone(pod.metadata);
    await runner.delete(seconds * 1000);
    if (runner.record.network) {
      // As the kubelet stops the sandbox: CNI DEL once its processes are gone.
      await this.#options.network?.tearDown(runner.record.pod, runner.record.network).catch((
        err,
      ) => this.#deps.log.warn("pod {pod}: CNI DEL failed: {err}", { pod: runner.key, err }));
    }
    this.#notify(runner);
    this.#runners.delete(runner.key);
    await Deno.remove(runner.paths.dir, { recursive: true }).catch(() => {});
    // The kubelet removes a deleted pod's log directory with it.
    const { namespace = "", name = "", uid = "" } = runner.record.pod.metadata ?? {};
    await this.#deps.podLogs?.removePod({ namespace, pod: name, uid }).catch((err) =>
      this.#deps.log.warn("pod {pod}: its log directory could not be removed: {err}", {
        pod: runner.key,
        err,
      })
    );
  }

  getPod(namespace: string, name: string, options: CallOptions): Promise<Pod | undefined> {
    options.signal?.throwIfAborted();
    return Promise.resolve(this.#runners.get(podKey(namespace, name))?.pod());
  }

  listPods(options: CallOptions): Promise<Pod[]> {
    options.signal?.throwIfAborted();
    return Promise.resolve([...this.#runners.values()].map((r) => r.pod()));
  }

  notifyPods(callback: (pod: Pod) => void): () => void {
    this.#callbacks.add(callback);
    return () => void this.#callbacks.delete(callback);
  }

  getPodStatus(
    namespace: string,
    name: string,
    options: CallOptions,
  ): Promise<PodStatus | undefined> {
    options.signal?.throwIfAborted();
    return Promise.resolve(this.#runners.get(podKey(namespace, name))?.status());
  }

  /** The Node as the server has it: its podCIDRs become the pods' CNI ranges. */
  observeNode(node: Node): void {
    const cidrs = node.spec?.podCIDRs ?? (node.spec?.podCIDR ? [node.spec.podCIDR] : []);
    this.#options.network?.setPodCIDRs(cidrs);
  }

  configureNode(node: Node): void {
    const podCIDR = this.#config.network?.podCIDR;
    // --pod-cidr: the Node is registered with it (spec is only written at registration).
    if (podCIDR) node.spec = { ...node.spec, podCIDR, podCIDRs: [podCIDR] };
    configureProcessNode(
      node,
      this.#config,
      this.#capacity,
      this.#deps,
      this.#options.mountNamespace,
    );
  }

  async ping(options: CallOptions): Promise<void> {
    options.signal?.throwIfAborted();
    await Deno.stat(this.#config.stateDir);
  }

  async getContainerLogs(ref: ContainerRef, options: ContainerLogOptions) {
    const runner = this.#get(ref.namespace, ref.pod);
    this.#container(runner, ref);
    const cr = runner.record.containers[ref.container];
    const current = cr?.running?.instance ?? cr?.terminated?.instance ?? cr?.restartCount ?? 0;
    const instance = options.previous ? (cr?.lastTermination?.instance ?? -1) : current;
    if (instance < 0) {
      throw new InvalidInputError(
        `previous terminated container "${ref.container}" in pod "${ref.pod}" not found`,
      );
    }
    const runningInstance = () => runner.record.containers[ref.container]?.running?.instance;
    return await containerLogStream({
      path: runner.paths.log(ref.container, instance),
      maxFiles: this.#config.logs.maxFiles,
      isRunning: () => !options.previous && runningInstance() === instance,
      now: () => this.#deps.clock.now(),
      stopped: this.#deps.signal,
    }, options);
  }

  async runInContainer(ref: ContainerRef, options: ExecOptions): Promise<number> {
    const runner = this.#get(ref.namespace, ref.pod);
    this.#container(runner, ref);
    const live = await this.#live(runner, ref, "exec");
    return await runInteractive(live.exec, options.command, options.io, options.signal);
  }

  async attachToContainer(ref: ContainerRef, options: AttachOptions): Promise<void> {
    const runner = this.#get(ref.namespace, ref.pod);
    const container = this.#container(runner, ref);
    const live = await this.#live(runner, ref, "attach");
    const target = {
      container,
      instance: live.instance,
      onStdinClosed: () => runner.saveSoon(),
    };
    await attachSession(target, options.io, options.signal);
  }

  async portForward(ref: PodRef, options: PortForwardOptions): Promise<void> {
    const runner = this.#get(ref.namespace, ref.name);
    const owns = (port: number) => {
      const running = allContainers(runner.record.pod).flatMap((c) => {
        const live = runner.live(c.name);
        return live ? [live.instance.record] : [];
      });
      return podOwnsPort(runner.record.pod, podPids(running), port);
    };
    await forwardPort(options.port, options.stream, {
      signal: options.signal,
      pod: runner.key,
      owns,
      netns: runner.record.network?.netns,
    });
  }

  getStatsSummary(options: CallOptions): Promise<StatsSummary> {
    options.signal?.throwIfAborted();
    return Promise.resolve(this.#summary());
  }

  getMetricsResource(options: CallOptions): Promise<string> {
    options.signal?.throwIfAborted();
    return Promise.resolve(metricsText(this.#summary()));
  }

  async close(): Promise<void> {
    await Promise.all([...this.#runners.values()].map((r) => r.close()));
    this.#runners.clear();
  }

  #summary(): StatsSummary {
    const pods = [...this.#runners.values()].map((runner) => ({
      namespace: runner.record.pod.metadata?.namespace ?? "",
      name: runner.record.pod.metadata?.name ?? "",
      uid: runner.record.pod.metadata?.uid ?? "",
      startTimeMs: runner.record.startTimeMs,
      containers: Object.values(runner.record.containers).flatMap((cr) =>
        cr.running ? [{ name: cr.name, record: cr.running }] : []
      ),
    }));
    return statsSummary(
      this.#deps.nodeName,
      this.#startMs,
      pods,
      this.#sampler,
      this.#deps.clock.now(),
    );
  }

  #validate(pod: Pod): void {
    if (pod.spec?.hostNetwork) {
      // The API's rule (pkg/apis/core/validation `validateHostNetwork`): with the host's
      // network a hostPort is the containerPort itself.
      for (const c of pod.spec.containers ?? []) {
        for (const p of c.ports ?? []) {
          if (p.hostPort !== undefined && p.hostPort !== 0 && p.hostPort !== p.containerPort) {
            throw new InvalidInputError(
              `container ${c.name}: hostPort ${p.hostPort} must match containerPort ${p.containerPort} when hostNetwork is true`,
            );
          }
        }
      }
    }
    const volumes = new Set((pod.spec?.volumes ?? []).map((v) => v.name));
    for (const volume of pod.spec?.volumes ?? []) validateVolume(volume, this.#config);
    // Not ephemeral containers: one that cannot start waits on its own, the pod runs on.
    const ephemeral = new Set((pod.spec?.ephemeralContainers ?? []).map((c) => c.name));
    for (const c of allContainers(pod).filter((c) => !ephemeral.has(c.name))) {
      const what = `container ${c.name}`;
      containerArgv(c, containerEnv(pod, c), this.#config.imageCommands);
      validateAction(c.livenessProbe, `${what} liveness probe`);
      validateAction(c.readinessProbe, `${what} readiness probe`);
      validateAction(c.startupProbe, `${what} startup probe`);
      validateAction(c.lifecycle?.postStart, `${what} postStart hook`);
      validateAction(c.lifecycle?.preStop, `${what} preStop hook`);
      for (const mount of c.volumeMounts ?? []) {
        if (!volumes.has(mount.name)) {
          throw new InvalidInputError(
            `${what} mounts volume ${mount.name}, which the pod does not define`,
          );
        }
      }
    }
  }

  #runner(record: PodRecord, paths: PodPaths): PodRunner {
    const deps: RunnerDeps = {
      clock: this.#deps.clock,
      log: this.#deps.log,
      config: this.#config,
      mountNamespace: this.#options.mountNamespace,
      cgroups: this.#options.cgroups,
      stopMarker: this.#stopMarker,
      hostUser: this.#hostUser,
      podLogs: this.#deps.podLogs,
      hostIp: this.#deps.internalIp,
      volumeContext: {
        source: this.#options.volumeSource,
        hostPath: this.#config.hostPath,
        tokenExpirationSeconds: this.#config.tokenExpirationSeconds,
        allocatable: this.#capacity,
        now: () => this.#deps.clock.now(),
      },
      changed: () => this.#notify(runner),
    };
    const runner = new PodRunner(record, paths, deps);
    return runner;
  }

  #notify(runner: PodRunner): void {
    const pod = runner.pod();
    for (const callback of this.#callbacks) {
      try {
        callback(structuredClone(pod));
      } catch (err) {
        this.#deps.log.error("pod status callback failed", { pod: runner.key, err });
      }
    }
  }

  #get(namespace: string | undefined, name: string | undefined): PodRunner {
    const runner = this.#runners.get(podKey(namespace, name));
    if (!runner) {
      throw new NotFoundError(`pod ${podKey(namespace, name)} is not running on this node`);
    }
    return runner;
  }

  /** The running instance, or an error that says what state the container is in instead. */
  async #live(runner: PodRunner, ref: ContainerRef, what: "exec" | "attach") {
    await runner.started(ref.container);
    const live = runner.live(ref.container);
    if (live) return live;
    const cr = runner.record.containers[ref.container];
    const state = cr?.terminated
      ? `it terminated (${cr.terminated.reason}, exit code ${cr.terminated.exitCode}${
        cr.terminated.message ? `: ${cr.terminated.message}` : ""
      })`
      : cr?.waiting
      ? `it is waiting (${cr.waiting.reason})`
      : "it has not started yet";
    throw new InvalidInputError(
      `container ${ref.container} is not running; ${what} needs a running container, and ${state}`,
    );
  }

  #container(runner: PodRunner, ref: ContainerRef) {
    const container = allContainers(runner.record.pod).find((c) => c.name === ref.container);
    if (!container) {
      throw new NotFoundError(
        `container ${ref.container} is not in pod ${ref.namespace}/${ref.pod}`,
      );
    }
    return container;
  }
}
