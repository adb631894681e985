/**
 * The provider contract: what vkubelet's controllers and kubelet API ask of the module that
 * actually runs pods (in memory, as local processes, in another cluster...). Types, provider
 * errors and a few helpers; nothing else.
 *
 * A provider has a required lifecycle part (create, update, delete, get, list) and optional
 * capabilities; the core checks for each optional method and degrades without it (polling
 * instead of push, 501 on a kubelet API route). This is virtual-kubelet's split
 * (virtual-kubelet/virtual-kubelet node/podcontroller.go `PodLifecycleHandler`,
 * node/nodeutil/provider.go `Provider`) with explicit options bags and web streams.
 * @module
 */
import type { PodLogDir } from "./pod_log_dir.ts";
import type { Node, Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import type { Logger } from "./logger.ts";
import type { Clock } from "../base/clock.ts";
import type { SignalOptions } from "../base/options.ts";
import type { StatsSummary } from "./stats.ts";
import type { ProviderKubeClient } from "./kube_client.ts";

/** Every provider call takes one; the call should stop promptly when `signal` aborts. */
export type CallOptions = SignalOptions;

/** Names a pod on this node. */
export interface PodRef {
  /** The pod's namespace. */
  namespace: string;
  /** The pod's name. */
  name: string;
}

/** Names one container of a pod on this node. */
export interface ContainerRef {
  /** The pod's namespace. */
  namespace: string;
  /** The pod's name. */
  pod: string;
  /** The container's name in the pod's spec. */
  container: string;
}

/** What `kubectl logs` asked for (v1 `PodLogOptions`, as the kubelet API parsed it). */
export interface ContainerLogOptions extends CallOptions {
  /** Keep the stream open and send new lines until `signal` aborts. */
  follow?: boolean;
  /** Only the last N lines (before following). */
  tailLines?: number;
  /** Prefix each line with its RFC 3339 time (nanosecond precision) and a space. */
  timestamps?: boolean;
  /** Only lines newer than this many seconds; never set together with `sinceTime`. */
  sinceSeconds?: number;
  /** Only lines at or after this time. */
  sinceTime?: Date;
  /** Stop after this many bytes (may cut a line). */
  limitBytes?: number;
  /** Logs of the previous, terminated instance of the container. */
  previous?: boolean;
}

/** A terminal size change sent by `kubectl exec -t` / `attach -t`. */
export interface TerminalSize {
  /** Columns. */
  width: number;
  /** Rows. */
  height: number;
}

/**
 * The streams of an exec or attach session. The caller owns them: the provider reads `stdin`
 * until it ends, writes `stdout`/`stderr`, releases any reader/writer lock before it settles and
 * does not close the writables (the caller closes them after reporting the exit status).
 */
export interface AttachIO {
  /** The client's input; absent without `kubectl exec -i`. */
  stdin?: ReadableStream<Uint8Array>;
  /** The command's output; absent when the client does not read it. */
  stdout?: WritableStream<Uint8Array>;
  /** Absent when `tty` is true: a terminal merges stderr into stdout. */
  stderr?: WritableStream<Uint8Array>;
  /** The client asked for a terminal (`-t`). */
  tty: boolean;
  /** Terminal size changes; ends with the session. Only with `tty`. */
  resize?: AsyncIterable<TerminalSize>;
}

/** Options for {@link Provider.runInContainer}. */
export interface ExecOptions extends CallOptions {
  /** argv, as `kubectl exec POD -- cmd args...` sent it; never empty. */
  command: string[];
  /** The session's streams. */
  io: AttachIO;
}

/** Options for {@link Provider.attachToContainer}. */
export interface AttachOptions extends CallOptions {
  /** The session's streams. */
  io: AttachIO;
}

/** One forwarded connection: bytes from the client on `readable`, bytes to it on `writable`. */
export interface PortForwardStream {
  /** Bytes from the client. */
  readable: ReadableStream<Uint8Array>;
  /** Bytes to the client. */
  writable: WritableStream<Uint8Array>;
}

/** Options for {@link Provider.portForward}. */
export interface PortForwardOptions extends CallOptions {
  /** The pod's port to connect to. */
  port: number;
  /** The forwarded connection. */
  stream: PortForwardStream;
}

/**
 * A provider: runs the pods bound to this node somewhere and reports their status.
 *
 * Every method may be called concurrently for different pods; the core serialises calls for one
 * pod. Errors should be the classes below, so the core can tell a retry from a permanent failure.
 */
export interface Provider {
  /**
   * Starts the pod. The pod has its env already resolved (the core's downward API and
   * ConfigMap/Secret resolution); it shares its unchanged parts with the core's cache, so keep it
   * as it is or copy what you change (`structuredClone`), never change it in place. Creating a
   * pod the provider already runs (same uid) must succeed without a second instance. Throw
   * {@link InvalidInputError} for a pod that can never run here, {@link TransientError} for one
   * that may run on a later try.
   */
  createPod(pod: Pod, options: CallOptions): Promise<void>;
  /**
   * Applies a changed spec or metadata (images, labels, annotations, activeDeadlineSeconds,
   * `spec.ephemeralContainers`: the core then starts new ones with {@link runEphemeralContainer}).
   */
  updatePod(pod: Pod, options: CallOptions): Promise<void>;
  /**
   * Starts the ephemeral container `name` (`kubectl debug`) of a pod the provider runs: `pod` is
   * the current spec, env resolved, with `name` in `spec.ephemeralContainers`. Its status goes in
   * `status.ephemeralContainerStatuses`; it is never restarted. Called once per container (again
   * only while the provider reports no status for it). Without this method the core reports
   * such containers waiting (`EphemeralContainersNotSupported`) with a Warning event.
   */
  runEphemeralContainer?(pod: Pod, name: string, options: CallOptions): Promise<void>;
  /**
   * Stops the pod at once (the core has already waited out what it wants to wait) and reports a
   * terminal status through {@link notifyPods} in which every container is terminated; then the
   * pod leaves {@link listPods}. May be called more than once; for an unknown pod it resolves or
   * throws {@link NotFoundError}, and the core takes both as done.
   */
  deletePod(pod: Pod, options: CallOptions): Promise<void>;
  /** The pod as the provider runs it, with current status; `undefined` if unknown. A copy. */
  getPod(namespace: string, name: string, options: CallOptions): Promise<Pod | undefined>;
  /**
   * Every pod the provider runs for this node, and only for this node: the core deletes any
   * pod listed here that the API no longer has. Copies, or objects frozen deep (`Object.freeze`)
   * that the provider replaces rather than changes; the core never changes them either.
   */
  listPods(options: CallOptions): Promise<Pod[]>;

  /**
   * Registers a status callback. The provider calls it with the full pod (a copy, or a
   * deep-frozen object as for {@link listPods}; current `.status`) whenever a pod's status
   * changes, including the terminal status after delete. Returns the unsubscribe: after it the
   * provider no longer calls nor holds that callback (the core subscribes once per run of its
   * pod controller, so once per `--leader-elect` term). Must not block. Without it the core
   * polls {@link getPodStatus}.
   */
  notifyPods?(callback: (pod: Pod) => void): () => void;
  /**
   * fieldRef paths (such as `status.podIP`) that this provider's runtime resolves itself, because
   * their value is known only once the pod runs there: the core leaves env vars using them as
   * `valueFrom.fieldRef`, and `$(NAME)` references to such vars unexpanded in later values.
   */
  readonly deferredFieldPaths?: readonly string[];
  /**
   * True when the provider keeps Secret-sourced env values out of its plain env (its runtime's
   * own secret store): the core still resolves every var as for any provider, and marks each one
   * whose value came from a Secret (`secretKeyRef`, or `envFrom.secretRef`) with the Secret and
   * key in `valueFrom.secretKeyRef`, beside `value`. Values built with `$(NAME)` from such a var
   * are not marked.
   */
  readonly secretEnvRefs?: boolean;
  /** The pod's current status, or `undefined` if unknown. Used only when polling. */
  getPodStatus?(
    namespace: string,
    name: string,
    options: CallOptions,
  ): Promise<PodStatus | undefined>;
  /**
   * Fills in the provider's part of the Node before it is registered and on each status update:
   * capacity/allocatable, addresses, labels, taints, providerID, daemonEndpoints. Mutates `node`.
   */
  configureNode?(node: Node): void | Promise<void>;
  /** Registers a callback for when {@link configureNode} would now give a different answer. */
  notifyNodeChanged?(callback: () => void): void;
  /**
   * The Node as the API server has it, after registration and on each status check: what the
   * cluster decided for it, such as `spec.podCIDRs` from the controller-manager's
   * `--allocate-node-cidrs` (the kubelet reads it the same way, pkg/kubelet/kubelet_network.go
   * `updatePodCIDR`). Read-only for the provider.
   */
  observeNode?(node: Node): void;
  /**
   * Cheap health check of the backend's control plane. A remote provider rejects with a
   * `BackendUnreachableError` (`backendUnreachable(endpoint, err)`) naming what it could not
   * reach; the node then stays Ready, tainted, for `--provider-outage-grace`, and past that the
   * lease is not renewed.
   */
  ping?(options: CallOptions): Promise<void>;

  /** A container's log as bytes; with `follow`, the stream stays open until `signal` aborts. */
  getContainerLogs?(
    container: ContainerRef,
    options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>>;
  /** Runs a command in the container (`kubectl exec`); resolves with its exit code. */
  runInContainer?(container: ContainerRef, options: ExecOptions): Promise<number>;
  /** Connects to the container's main process (`kubectl attach`) until either side ends. */
  attachToContainer?(container: ContainerRef, options: AttachOptions): Promise<void>;
  /**
   * Connects `stream` to `port` inside the pod (`kubectl port-forward`); closes `writable` when
   * the target closes, and resolves when both directions are done or `signal` aborts.
   */
  portForward?(pod: PodRef, options: PortForwardOptions): Promise<void>;
  /** `/stats/summary` (stats/v1alpha1 `Summary`) for the node and its running pods. */
  getStatsSummary?(options: CallOptions): Promise<StatsSummary>;
  /** `/metrics/resource` in the Prometheus text format (0.0.4), as a kubelet serves it. */
  getMetricsResource?(options: CallOptions): Promise<string>;
  /** Releases connections and timers when vkubelet stops. Must not stop or delete pods. */
  close?(): Promise<void>;
  /**
   * True when several replicas of the node may each load this provider, one leading at a time
   * (`--leader-elect`): the pods' state lives outside the process, or a new leader's
   * `createPod` adopts a running pod from the status already written (same IP, start times,
   * restart counts), so a takeover restarts nothing. Without it `--leader-elect` is refused.
   */
  readonly highAvailability?: boolean;
  /**
   * `--leader-elect`: this replica starts leading. `pods` are the pods bound to the node as the
   * API has them (the standby's synced cache), told before the term's first `createPod`, so a
   * provider that adopts pods from their status can reserve what they hold (the mock: their
   * IPs, which a pod bound during the takeover must not get).
   */
  resume?(pods: readonly Pod[]): void;
  /**
   * `--leader-elect`: this replica stopped leading (it stands by again). Stop the work done in
   * the background for a leader — copies kept in step, tokens renewed — without undoing any of
   * it (no deletes): the pods keep running and the new leader takes them over. Creates, updates
   * and deletes are refused to a standby anyway; {@link resume} is told when it leads again.
   */
  standby?(): void;
}

/**
 * `--leader-elect`: whether this replica may write now. A provider with clients of its own (a
 * second cluster, a cloud API) asks it before each write to them, so that a standby, or a leader
 * whose lease has run out, writes nothing anywhere.
 */
export interface WriteFence {
  /** True while this replica leads and its lease is surely its own. */
  readonly open: boolean;
  /** Throws (a `NotLeaderError`) unless {@link open}; `what` names the write, for the message. */
  check(what: string): void;
  /** For a `KubeClient`'s `beforeSend`: reads pass, every other method needs the fence open. */
  guardRequest(request: { method: string; path: string }): void;
}

/** What the core hands a provider factory. */
export interface ProviderDeps {
  /** The Node's name. */
  nodeName: string;
  /** The provider's logger (category `["vkubelet", "provider"]`). */
  log: Logger;
  /** Time and sleeps; a fake in tests. */
  clock: Clock;
  /** The node's InternalIP (`--node-ip` / `VKUBELET_POD_IP`, or detected). */
  internalIp: string;
  /** The kubelet API port announced in `status.daemonEndpoints` (`KUBELET_PORT`). */
  daemonPort: number;
  /** Aborts when vkubelet shuts down; background work of the provider should stop with it. */
  signal: AbortSignal;
  /**
   * vkubelet's Kubernetes client (a `KubeClient` from `k8s/`), for providers that read the
   * ConfigMaps and Secrets their pods use or ask for service-account tokens; typed by the
   * methods a provider may call, so it needs no cast. Absent in unit tests that give none.
   */
  kube?: ProviderKubeClient;
  /**
   * `--leader-elect` only: check it before every write to the provider's own backends (its
   * createPod, updatePod and deletePod are fenced already). Absent without leader election.
   */
  fence?: WriteFence;
  /**
   * The node's event recorder, the one the core records its own pod events with: rate-limited
   * per pod and aggregated as the kubelet's (client-go tools/record). Providers record through
   * `podEventSink` (./events.ts) rather than calling it directly. Absent in unit tests that give none.
   */
  events?: PodEventRecorder;
  /**
   * Where the pods' container logs go in the kubelet's layout for a node log agent
   * (`--pod-log-dir`; ./pod_log_dir.ts): a provider that runs the containers writes their output
   * there, the kit's remote pods mirror their backend's logs there. Absent when turned off.
   */
  podLogs?: PodLogDir;
  /**
   * Remote providers on a node with a pod network for remote pods (issue #64, vkubelet's
   * `--remote-pod-network`): gives each pod an IP on this node and the tunnel agent to start
   * beside its containers. The kit's RemotePods calls it; absent when turned off.
   */
  podNetwork?: PodNetworkHandle;
}

/** A remote pod's place on the node's pod network, and how its side of the tunnel starts. */
export interface PodNetworkAttachment {
  /** The pod's IP on this node, reported as `status.podIP`. */
  podIP: string;
  /** Every IP of the pod (`status.podIPs`). */
  podIPs: string[];
  /** The agent's argv, program first: run it beside the pod's containers, sharing their network. */
  agentCommand: string[];
  /** The agent's credential: give it as `VKUBELET_AGENT_CREDENTIAL`, never on a command line. */
  agentCredential: string;
}

/**
 * The `name`s of the errors {@link PodNetworkHandle.reattach} rejects with when the pod's
 * attachment can never be had again (its namespace lost and its IP taken meanwhile; its kept
 * state unreadable): its sandbox changed. Any other rejection may pass (a relay slow to start, a
 * full disk), and the reattach is tried again.
 */
export const POD_NETWORK_LOST_ERRORS: readonly string[] = [
  "PodIPUnavailableError",
  "AttachmentStateError",
];

/** Attaches remote pods to the node's pod network (see {@link ProviderDeps.podNetwork}). */
export interface PodNetworkHandle {
  /** An IP and a tunnel credential for `pod` (an earlier attachment of it is replaced). */
  attach(pod: Pod): Promise<PodNetworkAttachment>;
  /** Revokes the pod's credential and gives its IP back; nothing when it is not attached. */
  detach(pod: Pod): Promise<void>;
  /**
   * After a restart, for a pod whose run was adopted: its attachment from before (same IP, its
   * agent's credential accepted), or undefined when it had none. Rejects with an error named in
   * {@link POD_NETWORK_LOST_ERRORS} when it cannot be had again; after any other rejection the
   * kept attachment stays, to be tried again.
   */
  reattach?(pod: Pod): Promise<PodNetworkAttachment | undefined>;
  /**
   * Once the first list's runs are adopted (never after a failed list): detaches what was kept
   * for pods not among `pods` (gone while vkubelet was not running).
   */
  adopted?(pods: Pod[]): Promise<void>;
  /**
   * For pods that run in another cluster's pod network (the kubernetes provider, issue #64 item
   * 4): one gateway agent, run in that cluster, carries the streams of all of this node's pods.
   */
  gateway?(options?: { credential?: string }): Promise<PodNetworkGateway>;
}

/**
 * A node's gateway (see {@link PodNetworkHandle.gateway}): its pods get an IP on this node with
 * no agent of their own; connections to that IP reach the pod's address where it runs through
 * the gateway agent, and the gateway's listeners carry the pods' calls to this cluster's
 * Services, dialed from the calling pod's IP here.
 */
export interface PodNetworkGateway {
  /** The gateway agent's argv, program first (`… agent --gateway --server=… --ca-base64=…`). */
  agentCommand: string[];
  /**
   * Its credential (`VKUBELET_AGENT_CREDENTIAL`): the one passed to {@link PodNetworkHandle.gateway}
   * when this node still accepts it (kept across restarts), else a new one (the old revoked).
   */
  agentCredential: string;
  /** An IP on this node for `pod`, with listeners on its declared ports; replaces an earlier one. */
  attach(pod: Pod): Promise<{ podIP: string; podIPs: string[] }>;
  /** After a restart: the pod's IP from before, or undefined when it had none. */
  reattach(pod: Pod): Promise<{ podIP: string; podIPs: string[] } | undefined>;
  /** Gives the pod's IP back; nothing when it is not attached. */
  detach(pod: Pod): Promise<void>;
  /** As {@link PodNetworkHandle.adopted}, for the gateway's pods. */
  adopted(pods: Pod[]): Promise<void>;
  /**
   * Where the pod runs (its IP in the other cluster), once known: connections to its IP here
   * are dialed there by the gateway, and calls the gateway receives from that address are the
   * pod's. Undefined: the pod has no address there (yet, or any more). An IP address, never a
   * name; setting one another pod of the node had takes it from that pod (the other cluster gave
   * it anew).
   */
  setRemoteAddress(pod: Pod, address: string | undefined): void;
  /**
   * The Services the gateway serves, each port on a port of the gateway's own (chosen by the
   * provider, ≥ 1024, stable while the Service exists): a connection to it from a pod's address is
   * dialed from that pod's IP here to the Service, if the pod may see it (its namespace's).
   * Replaces the earlier list; throws a RangeError for a gateway port below 1024 or given twice.
   */
  setServices(services: GatewayService[]): void;
}

/** One Service port the gateway listens for (see {@link PodNetworkGateway.setServices}). */
export interface GatewayService {
  /** The Service's namespace in this cluster (the calling pod's, to be allowed). */
  namespace: string;
  /** The Service's name. */
  name: string;
  /** The Service's port in this cluster. */
  port: number;
  /** The gateway's own TCP port for it. */
  gatewayPort: number;
}

/** One event on a pod, as a provider records it. */
export interface ProviderPodEvent {
  /** `Warning` for what went wrong, `Normal` for the rest (as the kubelet's). */
  type: "Normal" | "Warning";
  /** A CamelCase reason, such as `Pulled` or `BackOff`. */
  reason: string;
  /** What happened, for people. */
  message: string;
  /** `spec.containers{name}` for a container's event. */
  fieldPath?: string;
  /** `source.component` when not the node's (`kubelet`): e.g. `vkubelet-aci` for relayed events. */
  component?: string;
}

/** Records events on pods in the background; never throws, never waits. */
export interface PodEventRecorder {
  /** Records `event` on `pod`: repeats are aggregated, and past the pod's burst some are dropped. */
  record(pod: Pod, event: ProviderPodEvent): void;
}

/** Builds a provider from its parsed config file (`undefined` without `--provider-config`). */
export type ProviderFactory = (
  config: unknown,
  deps: ProviderDeps,
) => Promise<Provider> | Provider;

/** What an external provider module (path or URL given to `--provider`) exports. */
export interface ProviderModule {
  /** Builds the provider from its config and vkubelet's deps. */
  createProvider: ProviderFactory;
}

/**
 * The optional capabilities a provider has, by method name, for start-up logs and 501s.
 *
 * @example Usage
 * ```ts
 * import { providerCapabilities, type Provider } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * const provider = {
 *   createPod: () => Promise.resolve(),
 *   updatePod: () => Promise.resolve(),
 *   deletePod: () => Promise.resolve(),
 *   getPod: () => Promise.resolve(undefined),
 *   listPods: () => Promise.resolve([]),
 *   ping: () => Promise.resolve(),
 * } satisfies Provider;
 * assert.ok(providerCapabilities(provider).includes("ping"));
 * ```
 */
export function providerCapabilities(provider: Provider): string[] {
  const optional = [
    "notifyPods",
    "getPodStatus",
    "configureNode",
    "notifyNodeChanged",
    "ping",
    "getContainerLogs",
    "runInContainer",
    "attachToContainer",
    "portForward",
    "getStatsSummary",
    "getMetricsResource",
    "resume",
    "standby",
  ] as const;
  return optional.filter((name) => typeof provider[name] === "function");
}
