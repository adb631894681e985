/**
 * The kubernetes provider's parts, built once and wired to each other: the informer of this
 * node's pods in B, the node, the copies kept in B (ConfigMaps and Secrets, tokens, Services,
 * claims), the status relay and the unschedulable watch, the gateway, streaming access and the
 * event relay. What the parts call back into (a pod left B, a namespace may go, a pod cannot be
 * scheduled) is the pod lifecycle's, passed in as {@link PartHooks}.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { Informer, KubeClient } from "../../k8s/mod.ts";
import type { ProviderDeps, ProviderKubeClient } from "../../provider/mod.ts";
import { CciNamespaceCheck } from "./cci/cci_namespace.ts";
import { type ClaimCopies, claimCopiesFor } from "./copies/claims.ts";
import { DependencyMirror } from "./copies/dependencies.ts";
import { ServiceMirror } from "./copies/services.ts";
import { TokenMirror } from "./copies/tokens.ts";
import type { KubernetesConfig } from "./config.ts";
import { nodeSelector } from "./names.ts";
import { GatewayLink } from "./network/gateway_link.ts";
import { GatewayNetwork } from "./network/gateway_network.ts";
import { DownstreamNode } from "./node/downstream_node.ts";
import { Placement } from "./placement.ts";
import { EventRelay } from "./status/event_relay.ts";
import { StatusRelay } from "./status/status_relay.ts";
import { UnschedulableWatch } from "./status/unschedulable.ts";
import { DownstreamAccess } from "./streaming/access.ts";
import { translatePod } from "./translate/translate.ts";

/** The two clusters: A (where the virtual node is, vkubelet's client) and B (where pods run). */
export interface KubernetesClients {
  upstream: ProviderKubeClient;
  downstream: KubeClient;
}

/** What the parts call back into, answered once the pod lifecycle exists. */
export interface PartHooks {
  /** The pod has left B, its last status sent: free what it held there. */
  release(k: string, pod: Pod): void;
  /** `namespaces: same`: B's namespace may have no pod left. */
  removeNamespaceIfUnused(where: string): void;
  /** B cannot schedule the pod. */
  failUnschedulable(downstream: Pod, message: string): void;
}

/** What changes while the provider runs. */
export interface ProviderState {
  /** `--leader-elect`: this replica does not lead, so it keeps nothing in B current. */
  standingBy: boolean;
  /** The virtual node's `kubernetes.io/hostname` label, once the node is configured. */
  hostname?: string;
}

/** The provider's parts; see the module doc. */
export interface KubernetesParts {
  config: KubernetesConfig;
  deps: ProviderDeps;
  clients: KubernetesClients;
  /** B's client (`clients.downstream`). */
  b: KubeClient;
  /** Held here: a signal from AbortSignal.any must stay referenced while work listens to it. */
  signal: AbortSignal;
  state: ProviderState;
  /** This node's pods in B (label `vkubelet.io/virtual-node`). */
  ours: Informer<Pod>;
  place: Placement;
  node: DownstreamNode;
  relay: StatusRelay;
  mirror: DependencyMirror;
  tokens: TokenMirror;
  unschedulable: UnschedulableWatch;
  services?: ServiceMirror;
  /** `persistentVolumeClaims: copy`: the claims' copies in B (and A's binding). */
  claims?: ClaimCopies;
  /** `gateway`: the pods' IPs in A through the gateway in B, and A's Services reflected. */
  gateway: GatewayLink;
  /** `profile: cci`: B's namespace checked before the first pod. */
  cci?: CciNamespaceCheck;
  access: DownstreamAccess;
  /** The parts' loops, settled on close. */
  running: Promise<void>[];
  hooks: PartHooks;
  /** The downstream pod of the upstream pod `namespace/name`, if B has it. */
  downstreamOf(namespace: string, name: string): Pod | undefined;
  /** The pod of A as it runs in B (with the Services mirrored for its namespace). */
  translate(pod: Pod): ReturnType<typeof translatePod>;
}

interface Base {
  config: KubernetesConfig;
  deps: ProviderDeps;
  clients: KubernetesClients;
  signal: AbortSignal;
  place: Placement;
  state: ProviderState;
  hooks: PartHooks;
  running: Promise<void>[];
}

/** Builds the parts and starts their loops until `signal` aborts. */
export function buildParts(
  config: KubernetesConfig,
  deps: ProviderDeps,
  clients: KubernetesClients,
  signal: AbortSignal,
  hooks: PartHooks,
): KubernetesParts {
  const place = new Placement(config, deps.nodeName);
  const state = { standingBy: false };
  const base: Base = { config, deps, clients, signal, place, state, hooks, running: [] };
  const b = clients.downstream;
  const ours = b.pods.informer({
    namespace: place.watched,
    labelSelector: nodeSelector(deps.nodeName),
    name: "downstream pods",
  });
  const downstreamOf = (namespace: string, name: string) =>
    ours.store.get(place.namespaceOf(namespace), place.nameOf(namespace, name));
  const node = nodeOf(base);
  const network = gatewayNetworkOf(base, (k) => {
    // The pod got its IP in A: its status is reported again with it.
    const [namespace, name] = k.split("/");
    const downstream = downstreamOf(namespace, name);
    if (downstream) status.relay.onDownstream(downstream); // called once attached: status is set
  });
  const gateway = new GatewayLink({ network, log: deps.log, signal });
  const copies = copiesOf(base, network);
  const status = statusOf(base, gateway);
  const parts: KubernetesParts = {
    ...base,
    ...copies,
    ...status,
    b,
    ours,
    node,
    gateway,
    downstreamOf,
    cci: config.profile === "cci" && config.namespace
      ? new CciNamespaceCheck(b, config.namespace)
      : undefined,
    access: accessOf(base, ours, downstreamOf),
    translate: translatorOf(base, copies.services),
  };
  watchOurs(parts);
  return parts;
}

/** A pod of A as it runs in B, with the Services mirrored for its namespace. */
function translatorOf({ config, deps, place }: Base, services: ServiceMirror | undefined) {
  return (pod: Pod) =>
    translatePod(pod, {
      config,
      nodeName: deps.nodeName,
      placement: place,
      services: services?.names(pod.metadata!.namespace!),
    });
}

/** The virtual node as B makes it. */
function nodeOf({ config, clients, deps }: Base): DownstreamNode {
  return new DownstreamNode({
    config,
    downstream: clients.downstream,
    nodeName: deps.nodeName,
    internalIp: deps.internalIp,
    daemonPort: deps.daemonPort,
  });
}

/** What B tells A: the pods' status (with `gateway`, their IPs in A), unschedulable pods failed. */
function statusOf({ config, deps, state, hooks }: Base, gateway: GatewayLink) {
  const relay = new StatusRelay({
    internalIp: deps.internalIp,
    clock: deps.clock,
    log: deps.log,
    release: (k, pod) => hooks.release(k, pod),
    podAddress: gateway.podAddress,
  });
  const unschedulable = new UnschedulableWatch({
    timeoutMs: config.unschedulableTimeout,
    clock: deps.clock,
    fail: (p, message) => hooks.failUnschedulable(p, message),
    active: () => !state.standingBy,
  });
  return { relay, unschedulable };
}

/** `gateway` (with the node's pod network): the gateway in B, deployed and kept from now on. */
function gatewayNetworkOf(
  { config, deps, clients, signal, running }: Base,
  onAttached: (k: string) => void,
): GatewayNetwork | undefined {
  const { gateway } = config;
  if (!gateway || !deps.podNetwork?.gateway) return undefined;
  const network = new GatewayNetwork({
    config: { ...config, gateway },
    downstream: clients.downstream,
    podNetwork: { gateway: deps.podNetwork.gateway.bind(deps.podNetwork) },
    nodeName: deps.nodeName,
    clock: deps.clock,
    log: deps.log,
    onAttached,
  });
  running.push(network.run(signal));
  return network;
}

/** What a pod needs in B, kept in step with A: ConfigMaps and Secrets, tokens, Services, claims. */
function copiesOf(base: Base, network: GatewayNetwork | undefined) {
  const { config, deps, clients, signal, place, state, hooks } = base;
  const { upstream, downstream } = clients;
  const { nodeName, clock, log } = deps;
  const common = { upstream, downstream, placement: place, nodeName, log, signal };
  const mirror = new DependencyMirror(common);
  const tokens = new TokenMirror({
    ...common,
    expirationSeconds: config.tokenExpirationSeconds,
    clock,
  });
  const services = (config.syncServices || network) && upstream.services
    ? new ServiceMirror({
      upstream: upstream.services,
      downstream,
      nodeName,
      log,
      signal,
      writer: network?.reflection,
    })
    : undefined;
  const claims = claimCopiesFor(config, {
    ...common,
    hostname: () => state.hostname ?? nodeName,
    leading: () => !state.standingBy,
    onNamespaceEmptied: (namespace) => hooks.removeNamespaceIfUnused(namespace),
    clock,
  });
  if (claims) base.running.push(claims.run(signal));
  return { mirror, tokens, services, claims };
}

/** Logs, exec, attach, port-forward and stats through B's apiserver. */
function accessOf(
  { clients, deps, place, signal }: Base,
  ours: Informer<Pod>,
  find: (namespace: string, name: string) => Pod | undefined,
): DownstreamAccess {
  return new DownstreamAccess({
    downstream: clients.downstream,
    nodeName: deps.nodeName,
    namespace: place.watched,
    clock: deps.clock,
    signal,
    pods: () => ours.store.list(),
    find,
  });
}

/** B's pods of this node drive the gateway, the status relay and the unschedulable watch. */
function watchOurs(parts: KubernetesParts): void {
  const { ours, gateway, relay, unschedulable, signal, deps, clients } = parts;
  for (const event of ["add", "update"] as const) {
    ours.on(event, (p: Pod) => {
      gateway.onDownstream(p);
      relay.onDownstream(p);
      unschedulable.observe(p);
    });
  }
  ours.on("delete", (p) => {
    unschedulable.forget(p);
    relay.onDownstreamGone(p);
  });
  parts.running.push(ours.run(signal), parts.node.run(signal), unschedulable.run(signal));
  if (clients.upstream.events) {
    const events = new EventRelay({
      downstream: clients.downstream,
      upstream: clients.upstream.events,
      namespace: parts.place.watched,
      nodeName: deps.nodeName,
      log: deps.log,
      downstreamPod: (namespace, name) => ours.store.get(namespace, name),
    });
    parts.running.push(events.run(signal));
  }
}
