/**
 * The Node vkubelet wants: its defaults (labels, taint, conditions, addresses, endpoint, node
 * info), then the provider's `configureNode`, then the Ready condition from the provider's
 * health. The controller diffs this against the server; nothing here talks to the API.
 * @module
 */
import type { Node, NodeCondition, Taint } from "kubernetes-types/core/v1.d.ts";
import type { Provider } from "../../provider/mod.ts";
import type { Health } from "./health_monitor.ts";
import { formatGrace, pastGrace, reachableCondition } from "./outage.ts";

/** The Kubernetes release vkubelet's kubelet API and node behaviour follow. */
export const KUBERNETES_VERSION = "1.37.2";

/** The condition types vkubelet owns on its Node (plus any the provider adds). */
export const NODE_CONDITION_TYPES = [
  "Ready",
  "MemoryPressure",
  "DiskPressure",
  "PIDPressure",
  "NetworkUnavailable",
] as const;

/** The taint that keeps ordinary pods (and DaemonSets) off a virtual node unless they tolerate it. */
export interface NodeTaintOptions {
  /** Default `virtual-kubelet.io/provider` (`VKUBELET_TAINT_KEY`). */
  key?: string;
  /** Default the provider's name (`VKUBELET_TAINT_VALUE`). */
  value?: string;
  /** Default `NoSchedule` (`VKUBELET_TAINT_EFFECT`). */
  effect?: "NoSchedule" | "PreferNoSchedule" | "NoExecute";
}

/** What the Node is built from; every field but `nodeName` and `version` has a default. */
export interface NodeTemplateOptions {
  nodeName: string;
  /** vkubelet's own version, for `nodeInfo.kubeletVersion` (`v1.X.Y-vkubelet-<version>`). */
  version: string;
  /** The provider's name, the default taint value. Default `vkubelet`. */
  providerName?: string;
  /** `InternalIP` address (`--node-ip` / `VKUBELET_POD_IP`); left out when absent. */
  internalIp?: string;
  /** `Hostname` address and `kubernetes.io/hostname` label; default the node name. */
  hostname?: string;
  /** `daemonEndpoints.kubeletEndpoint.Port` (`KUBELET_PORT`); default 10250. */
  kubeletPort?: number;
  /** `kubernetes.io/os` and `nodeInfo.operatingSystem`; default `linux`. */
  os?: string;
  /** `kubernetes.io/arch`; default the architecture vkubelet runs on, in Go's names. */
  arch?: string;
  /** Extra labels (`--node-labels`); they win over the defaults, the provider wins over them. */
  labels?: Record<string, string>;
  /** `false` leaves the taint out (`--disable-taint`); default the taint with its defaults. */
  taint?: NodeTaintOptions | false;
  /** More taints to register with (`--register-with-taints`, the kubelet's flag). */
  extraTaints?: Taint[];
  /**
   * `status.declaredFeatures` (Kubernetes 1.35+), e.g. `ExtendWebSocketsToKubelet` once the
   * kubelet API speaks WebSocket v5, so the apiserver stops translating exec to SPDY.
   */
  declaredFeatures?: string[];
}

/**
 * Capacity for a provider that does not set any: 110 pods (the kubelet's default `maxPods`),
 * and cpu and memory large enough not to be what limits scheduling (the ECI provider's figures,
 * virtual-kubelet/alibabacloud-eci eci.go). A scheduler refuses every pod while `pods` is 0.
 */
export const DEFAULT_CAPACITY: Readonly<Record<string, string>> = {
  cpu: "1000",
  memory: "4Ti",
  pods: "110",
};

/** Go's name for the architecture Deno runs on (`kubernetes.io/arch` uses Go's names). */
export function goArch(arch: string = Deno.build.arch): string {
  return ({ x86_64: "amd64", aarch64: "arm64" } as Record<string, string>)[arch] ?? arch;
}

/** `v1.37.2-vkubelet-0.1.0`: a Kubernetes version with vkubelet's as pre-release part. */
export function kubeletVersion(version: string, kubernetes: string = KUBERNETES_VERSION): string {
  return `v${kubernetes}-vkubelet-${version}`;
}

/** The node's defaults before the provider has a say. */
export function baseNode(options: NodeTemplateOptions): Node {
  const name = options.nodeName;
  const os = options.os ?? "linux";
  const arch = options.arch ?? goArch();
  const hostname = options.hostname ?? name;
  // Labels a kubelet sets (kubernetes/kubernetes pkg/kubelet/kubelet_node_status.go
  // `initialNode`) plus virtual-kubelet's (virtual-kubelet/virtual-kubelet
  // node/nodeutil/node.go `NewNode`; the mock's exclude-from-external-load-balancers).
  const labels: Record<string, string> = {
    "type": "virtual-kubelet",
    "kubernetes.io/role": "agent",
    "kubernetes.io/hostname": hostname,
    "kubernetes.io/os": os,
    "kubernetes.io/arch": arch,
    "node.kubernetes.io/exclude-from-external-load-balancers": "true",
    ...options.labels,
  };
  const addresses = [
    ...(options.internalIp ? [{ type: "InternalIP", address: options.internalIp }] : []),
    { type: "Hostname", address: hostname },
  ];
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name, labels, annotations: {} },
    spec: {
      // A providerID keeps cloud node-lifecycle controllers from deleting a node they do not
      // know (kubernetes-sigs/kwok site/content/en/docs/user/known-issues/nodes-unexpectedly-deleted.md).
      providerID: `vkubelet://${name}`,
      taints: [
        ...(options.taint === false ? [] : [defaultTaint(options)]),
        ...(options.extraTaints ?? []).filter((t) =>
          options.taint === false || t.key !== defaultTaint(options).key
        ),
      ],
    },
    status: {
      capacity: { ...DEFAULT_CAPACITY },
      allocatable: { ...DEFAULT_CAPACITY },
      conditions: defaultConditions(),
      addresses,
      daemonEndpoints: { kubeletEndpoint: { Port: options.kubeletPort ?? 10250 } },
      ...(options.declaredFeatures?.length
        ? { declaredFeatures: [...options.declaredFeatures].sort() }
        : {}),
      nodeInfo: {
        machineID: "",
        systemUUID: "",
        bootID: "",
        kernelVersion: "",
        osImage: "",
        containerRuntimeVersion: `vkubelet://${options.version}`,
        kubeletVersion: kubeletVersion(options.version),
        kubeProxyVersion: "",
        operatingSystem: os,
        architecture: arch,
      },
    },
  };
}

function defaultTaint(options: NodeTemplateOptions): Taint {
  const taint = options.taint || {};
  return {
    key: taint.key ?? "virtual-kubelet.io/provider",
    value: taint.value ?? options.providerName ?? "vkubelet",
    effect: taint.effect ?? "NoSchedule",
  };
}

/** Reasons and messages as the kubelet words them (kubernetes/kubernetes pkg/kubelet/nodestatus/setters.go). */
function defaultConditions(): NodeCondition[] {
  return [
    cond("Ready", "True", "KubeletReady", "vkubelet is posting ready status"),
    cond(
      "MemoryPressure",
      "False",
      "KubeletHasSufficientMemory",
      "kubelet has sufficient memory available",
    ),
    cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    // The kubelet leaves this one to CNI or route controllers; a virtual node has neither, and
    // its provider networks the pods, so it is ours to say (as virtual-kubelet does).
    cond(
      "NetworkUnavailable",
      "False",
      "ProviderManagesNetwork",
      "the provider networks this node's pods",
    ),
  ];
}

function cond(type: string, status: string, reason: string, message: string): NodeCondition {
  return { type, status, reason, message };
}

/** Reason on Ready while the provider's ping fails. */
export const PING_FAILED_REASON = "ProviderPingFailed";

/** How Ready reads the provider's health: past `graceMs` of failed pings (default 0), False. */
export interface ReadyOptions {
  /** `--provider-outage-grace` in ms; 0 (default) turns Ready False at the first failed ping. */
  graceMs?: number;
  /** Now on the controller's clock; default `health.since` (so grace 0 works without it). */
  now?: number;
}

/**
 * The full desired Node: defaults, then `provider.configureNode` (which may change capacity,
 * addresses, labels, taints, providerID and conditions), then `ProviderReachable` and Ready from
 * `health`. A provider that reports Ready False keeps it; an outage past its grace always wins.
 */
export async function desiredNode(
  options: NodeTemplateOptions,
  provider: Pick<Provider, "configureNode">,
  health: Health,
  ready: ReadyOptions = {},
): Promise<Node> {
  const node = baseNode(options);
  const defaultAllocatable = node.status!.allocatable;
  await provider.configureNode?.(node);
  fillAllocatable(node, defaultAllocatable);
  const conditions = dedupeConditions([
    ...(node.status?.conditions ?? []),
    reachableCondition(health),
  ]);
  const graceMs = ready.graceMs ?? 0;
  if (pastGrace(health, ready.now ?? health.since, graceMs)) {
    const cond = conditions.find((c) => c.type === "Ready")!;
    cond.status = "False";
    cond.reason = PING_FAILED_REASON;
    const since = graceMs > 0
      ? ` since ${new Date(health.since).toISOString()} (longer than --provider-outage-grace ` +
        `${formatGrace(graceMs)})`
      : "";
    cond.message = `provider ping failed${since}: ${health.message ?? "unknown error"}`
      .slice(0, 1024);
  }
  node.status!.conditions = conditions;
  return node;
}

/**
 * A provider that set capacity but left allocatable alone means "all of it is allocatable";
 * any resource with capacity but no allocatable entry gets its capacity.
 */
function fillAllocatable(node: Node, defaultAllocatable: unknown): void {
  const status = node.status!;
  const capacity = status.capacity ?? {};
  const untouched = status.allocatable === defaultAllocatable &&
    JSON.stringify(status.allocatable) === JSON.stringify(DEFAULT_CAPACITY);
  const allocatable = untouched ? {} : { ...status.allocatable };
  for (const [name, quantity] of Object.entries(capacity)) allocatable[name] ??= quantity;
  status.allocatable = allocatable;
}

/** One condition per type, the last one given winning; Ready always present. */
function dedupeConditions(conditions: NodeCondition[]): NodeCondition[] {
  const byType = new Map<string, NodeCondition>();
  for (const c of conditions) byType.set(c.type, { ...c });
  if (!byType.has("Ready")) {
    byType.set("Ready", cond("Ready", "True", "KubeletReady", "vkubelet is posting ready status"));
  }
  return [...byType.values()];
}
