/**
 * What every provider whose pods live on a remote backend repeats, answered once: a provider that
 * extends {@link RemotePodsProvider} hands its backend to the constructor and writes only what is
 * its own (the node, logs, exec, stats). The class starts the kit's {@link RemotePods} (adopt,
 * poll, restart, notify) and stops it on close, answers the six pod calls, and has the checks
 * and answers its subclasses share: a pod and container on this node ({@link
 * RemotePodsProvider.known}, init containers included), a ping whose failure says the backend is
 * unreachable ({@link RemotePodsProvider.reach}), logs from the backend's
 * ({@link RemotePodsProvider.backendLogs}), and exec, attach or port-forward refused with the
 * reason ({@link RemotePodsProvider.refuse}); close closes the backend's client last (the setup's
 * `closeClient`). Lifecycle hooks follow the one rule of
 * ./lifecycle_hooks.ts: left to the backend, run through the provider's exec, or refused at create
 * — by the {@link HookMode} the provider declares (`hooks`).
 * @module
 */
import type { Node, Pod } from "kubernetes-types/core/v1.d.ts";
import type {
  CallOptions,
  ContainerLogOptions,
  ContainerRef,
  PodRef,
  Provider,
  ProviderDeps,
} from "./contract.ts";
import { NotFoundError, refuseStreaming, type StreamingKind } from "./errors.ts";
import { podEventSink } from "./events.ts";
import { checkPodHooks, ExecHooks, type HookMode, podHooks } from "./lifecycle_hooks.ts";
import { applyProviderNode, type ProviderNodeFields } from "./node.ts";
import { RemotePods, type RemotePodsOptions } from "./remote_pods.ts";
import type { RemoteBackend } from "./remote_backend.ts";
import { backendUnreachable, type BackendUnreachableHelpOptions } from "./unreachable.ts";

/** The pod lifecycle part of {@link Provider}, answered by the subclass's `pods`. */
export type RemotePodCalls = Pick<
  Provider,
  "createPod" | "updatePod" | "deletePod" | "getPod" | "listPods" | "notifyPods"
>;

/**
 * What a {@link RemotePodsProvider} runs: its backend, {@link RemotePods}' options (clock, log
 * and host IP come from the provider's deps), and loops of its own to run beside the pods'.
 */
export interface RemoteProviderSetup<H, B extends RemoteBackend<H>>
  extends Omit<RemotePodsOptions<H>, "backend" | "clock" | "log" | "hostIP"> {
  /** The backend the pods run on (kept as the provider's `backend`). */
  backend: B;
  /** Runs beside the pods' loop until close (a capacity check); resolves once `signal` ends. */
  alsoRun?: (signal: AbortSignal) => Promise<void>;
  /**
   * What lifecycle hooks do on this provider (./lifecycle_hooks.ts): `backend` (it runs them
   * itself; the pod reaches it unchanged), `exec` (the kit runs them through the provider's
   * `runInContainer`), or `refuse` (a pod with a hook fails at create). Default `refuse`.
   */
  hooks?: HookMode;
  /** With `refuse`: why the provider cannot run hooks, said in the refusal. */
  hooksRefused?: string;
  /** Closes what the backend talks through (its API client), once close has stopped the pods. */
  closeClient?: () => void;
}

/** The labels {@link RemotePodsProvider.applyNode} gives the node. */
export interface NodeLabels {
  /** `vkubelet.io/provider`: the provider's name. */
  provider: string;
  /** `kubernetes.io/os`; default linux. */
  os?: string;
  /** `kubernetes.io/arch` in Go's names (`amd64`, `arm64`): where the pods run, not vkubelet. */
  arch?: string;
  /** `topology.kubernetes.io/region`. */
  region?: string;
  /** `topology.kubernetes.io/zone`. */
  zone?: string;
}

/**
 * A remote provider's common part: see the module doc. The constructor calls `setup` with the
 * provider's signal (aborted by close or the deps' signal), makes `pods` on the backend it
 * answers and starts them; close stops them, never the runs on the backend.
 *
 * @example Usage
 * ```ts ignore
 * class CloudProvider extends RemotePodsProvider<Task, CloudBackend> implements Provider {
 *   constructor(config: CloudConfig, deps: ProviderDeps) {
 *     super(deps, (signal) => ({
 *       backend: new CloudBackend(config, deps, signal),
 *       intervalMs: config.statusInterval,
 *     }));
 *   }
 *   ping(options: CallOptions): Promise<void> {
 *     return this.reach((signal) => this.backend.ping(signal), options, config.endpoint);
 *   }
 * }
 * ```
 */
export abstract class RemotePodsProvider<
  H = unknown,
  B extends RemoteBackend<H> = RemoteBackend<H>,
> implements RemotePodCalls {
  /** What the provider was given. */
  protected readonly deps: ProviderDeps;
  /** The backend the pods run on. */
  protected readonly backend: B;
  /** The pods and their runs; the kit adopts, polls, restarts and notifies. */
  protected readonly pods: RemotePods<H>;
  /** Aborted by {@link close} or the deps' signal: the provider's own work stops with it. */
  protected readonly signal: AbortSignal;
  /** What lifecycle hooks do on this provider (see {@link RemoteProviderSetup.hooks}). */
  readonly hookMode: HookMode;
  readonly #hooksRefused?: string;
  readonly #execHooks?: ExecHooks;
  readonly #stop = new AbortController();
  readonly #running: Promise<unknown>;
  readonly #closeClient?: () => void;

  /** Makes the pods on `setup`'s backend and starts them (adoption first). */
  constructor(
    deps: ProviderDeps,
    setup: (signal: AbortSignal) => RemoteProviderSetup<H, B>,
  ) {
    this.deps = deps;
    this.signal = AbortSignal.any([deps.signal, this.#stop.signal]);
    const { backend, alsoRun, hooks = "refuse", hooksRefused, closeClient, ...options } = setup(
      this.signal,
    );
    this.backend = backend;
    this.#closeClient = closeClient;
    this.hookMode = hooks;
    this.#hooksRefused = hooksRefused;
    this.pods = new RemotePods({
      backend,
      clock: deps.clock,
      log: deps.log,
      hostIP: deps.internalIp,
      podLogs: deps.podLogs,
      podNetwork: deps.podNetwork,
      event: podEventSink(deps, "vkubelet"),
      // The mirror follows what `kubectl logs` shows, the backend's or the provider's own.
      mirrorLogs: this.#ownLogs(),
      ...options,
    });
    if (hooks === "exec") {
      const execHooks = new ExecHooks({
        exec: (ref, o) => this.#exec()(ref, o),
        clock: deps.clock,
        event: podEventSink(deps, "vkubelet"),
        signal: this.signal,
      });
      this.#execHooks = execHooks;
      this.pods.notifyPods((pod) => execHooks.observe(pod));
    }
    this.#running = Promise.all([this.pods.run(this.signal), alsoRun?.(this.signal)]);
  }

  /**
   * `Provider.createPod`: the pod's run made (or an adopted run taken over); a pod with a hook
   * this provider cannot run is refused (InvalidInputError naming it).
   */
  async createPod(pod: Pod, options: CallOptions): Promise<void> {
    checkPodHooks(pod, this.hookMode, this.#hooksRefused);
    const hooks = this.#execHooks;
    if (hooks && podHooks(pod).some((h) => h.kind === "postStart")) {
      // A run taken over from an earlier vkubelet had its containers' postStart run then.
      await this.pods.listPods(options); // once adopted
      const { namespace = "", name = "", uid } = pod.metadata ?? {};
      const known = await this.pods.getPod(namespace, name);
      if (known && known.metadata?.uid === uid) hooks.adopted(known);
      hooks.admit(pod);
    }
    await this.pods.createPod(pod, options);
  }

  /** `Provider.updatePod`: labels and annotations taken over. */
  updatePod(pod: Pod, options: CallOptions): Promise<void> {
    return this.pods.updatePod(pod, options);
  }

  /**
   * `Provider.deletePod`: the run removed, the terminal status pushed; with `exec` hooks, the
   * running containers' preStop hooks first, within the grace period (the kubelet's
   * `killContainer`).
   */
  async deletePod(pod: Pod, options: CallOptions): Promise<void> {
    const hooks = this.#execHooks;
    if (hooks && podHooks(pod).some((h) => h.kind === "preStop")) {
      const { namespace = "", name = "" } = pod.metadata ?? {};
      const status = (await this.pods.getPod(namespace, name))?.status;
      const running = [...status?.initContainerStatuses ?? [], ...status?.containerStatuses ?? []]
        .filter((c) => c.state?.running).map((c) => c.name);
      if (status && this.pods.runOf(namespace, name)) await hooks.preStop(pod, running);
    }
    await this.pods.deletePod(pod, options);
  }

  /** `Provider.getPod`. */
  getPod(namespace: string, name: string, options: CallOptions): Promise<Pod | undefined> {
    return this.pods.getPod(namespace, name, options);
  }

  /** `Provider.listPods`, once the backend's runs are adopted. */
  listPods(options: CallOptions): Promise<Pod[]> {
    return this.pods.listPods(options);
  }

  /** `Provider.notifyPods`; the function returned unsubscribes. */
  notifyPods(callback: (pod: Pod) => void): () => void {
    return this.pods.notifyPods(callback);
  }

  /**
   * Stops adopting and polling, and waits for it, then closes the backend's client (the setup's
   * `closeClient`); the pods' runs go on on the backend.
   */
  async close(): Promise<void> {
    this.#stop.abort();
    try {
      await Promise.all([this.#running, this.#execHooks?.close()]);
    } finally {
      this.#closeClient?.();
    }
  }

  /** The subclass's exec, for `exec` hooks. */
  #exec(): NonNullable<Provider["runInContainer"]> {
    const exec = (this as Partial<Provider>).runInContainer;
    if (typeof exec !== "function") {
      throw new TypeError('a RemotePodsProvider with hooks: "exec" has a runInContainer method');
    }
    return exec.bind(this);
  }

  /**
   * The pod of `ref` on this node, with its container (an init container too) for a
   * {@link ContainerRef}; else a {@link NotFoundError} naming what is missing.
   */
  protected known(ref: ContainerRef | PodRef): Pod {
    const name = "pod" in ref ? ref.pod : ref.name;
    const pod = this.pods.knownPod(ref.namespace, name);
    if (!("container" in ref)) return pod;
    const spec = pod.spec;
    const all = [...spec?.initContainers ?? [], ...spec?.containers ?? []];
    if (!all.some((c) => c.name === ref.container)) {
      throw new NotFoundError(`pod ${ref.namespace}/${name} has no container ${ref.container}`);
    }
    return pod;
  }

  /** The subclass's `getContainerLogs` (a method, so already there while this constructor runs). */
  #ownLogs(): RemotePodsOptions<H>["mirrorLogs"] {
    const own = (this as Partial<Provider>).getContainerLogs;
    return own && ((ref, options) => own.call(this, ref, options));
  }

  /**
   * `Provider.getContainerLogs` from the backend's `logs`, for any container of the pod, an init
   * container too ({@link known}), with the pod's current and previous runs.
   */
  protected async backendLogs(
    ref: ContainerRef,
    options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    const pod = this.known(ref);
    if (!this.backend.logs) throw new NotFoundError("this backend keeps no logs");
    const runs = this.pods.logRunsOf(ref.namespace, ref.pod);
    return await this.backend.logs(pod, ref.container, options, runs);
  }

  /**
   * The method that refuses `kind` saying `why` (see {@link refuse}), for a provider whose
   * backend has no such channel: `runInContainer = this.refusing("exec", "no exec API");`.
   */
  protected refusing(
    kind: StreamingKind,
    why: string,
  ): (ref: ContainerRef | PodRef) => Promise<never> {
    return (ref) => this.refuse(kind, why, ref);
  }

  /** A {@link refuseStreaming} of `kind`, saying `why`, once `ref` is {@link known}. */
  protected refuse(
    kind: StreamingKind,
    why: string,
    ref: ContainerRef | PodRef,
  ): Promise<never> {
    return refuseStreaming(kind, why, () => this.known(ref));
  }

  /**
   * `call`'s answer (the backend's ping) with the call's signal, or a BackendUnreachableError
   * naming `where` (see {@link backendUnreachable}): the node is then not Ready.
   */
  protected async reach<T>(
    call: (signal?: AbortSignal) => Promise<T>,
    options: CallOptions,
    where: string,
    help?: BackendUnreachableHelpOptions,
  ): Promise<T> {
    try {
      return await call(options.signal);
    } catch (err) {
      throw backendUnreachable(where, err, help);
    }
  }

  /**
   * {@link applyProviderNode} with the labels a remote provider's node has: `kubernetes.io/os`
   * (default linux), `vkubelet.io/provider`, the region and zone where given, then `fields`'.
   */
  protected applyNode(node: Node, fields: ProviderNodeFields, labels: NodeLabels): void {
    const { provider, os = "linux", arch, region, zone } = labels;
    applyProviderNode(node, {
      ...fields,
      labels: {
        "kubernetes.io/os": os,
        ...(arch ? { "kubernetes.io/arch": arch } : {}),
        ...(region ? { "topology.kubernetes.io/region": region } : {}),
        ...(zone ? { "topology.kubernetes.io/zone": zone } : {}),
        "vkubelet.io/provider": provider,
        ...fields.labels,
      },
    }, this.deps);
  }

  /** `signal` and the provider's together: a stream of the call ends with either. */
  protected callSignal(signal?: AbortSignal): AbortSignal {
    return signal ? AbortSignal.any([this.signal, signal]) : this.signal;
  }
}
