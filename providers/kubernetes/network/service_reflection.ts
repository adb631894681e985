/**
 * `gateway`: A's Services reflected into B, as liqo reflects EndpointSlices (liqotech/liqo
 * pkg/virtualKubelet/reflection/exposition): for each Service of A with a ClusterIP in a
 * namespace with forwarded pods, B's namespace of that name gets a selectorless Service of the
 * same name and TCP ports (type ClusterIP; B gives the IP) and one EndpointSlice whose endpoint is
 * the gateway pod with, per port, a port of the gateway's own ({@link GatewayPorts}). The gateway
 * dials the Service in A from the calling pod's A-side IP. Headless and ExternalName Services are
 * not reflected (a headless name resolves to endpoints and is dialed at the Service's own port,
 * which one gateway address cannot tell apart), nor UDP or SCTP ports (the gateway carries TCP).
 * The lifecycle (which namespaces, when, removal with the last pod) is ServiceMirror's
 * (../copies/services.ts); this is the writer it calls.
 * @module
 */
import type { Service, ServicePort } from "kubernetes-types/core/v1.d.ts";
import type { EndpointSlice } from "kubernetes-types/discovery/v1.d.ts";
import {
  isAlreadyExists,
  isInvalid,
  isKubeNotFound,
  type NamespacedApi,
} from "../../../k8s/mod.ts";
import type { GatewayService, Logger } from "../../../provider/mod.ts";
import type { ServiceWriter } from "../copies/services.ts";
import { markLabels, MARKS, nodeSelector } from "../names.ts";
import { GatewayPorts, portKey } from "./gateway_ports.ts";

/** The `vkubelet.io/role` of reflected Services and their EndpointSlices. */
export const REFLECTED_ROLE = "gateway-service";
/** `endpointslice.kubernetes.io/managed-by` of the slices (B's controller leaves them alone). */
export const SLICE_MANAGER = "gateway.vkubelet.io";

/** What {@link ServiceReflection} needs of B. */
export interface ReflectionClients {
  services: Pick<NamespacedApi<Service>, "get" | "create" | "patch" | "delete">;
  endpointSlices: Pick<
    NamespacedApi<EndpointSlice>,
    "get" | "list" | "create" | "patch" | "delete"
  >;
}

/** What {@link ServiceReflection} needs. */
export interface ServiceReflectionOptions {
  downstream: ReflectionClients;
  nodeName: string;
  log: Logger;
  /** Told the full list of reflected ports after each change (`PodNetworkGateway.setServices`). */
  onServices: (services: GatewayService[]) => void;
}

/** A's Services written into B as selectorless Services pointing at the gateway. */
export class ServiceReflection implements ServiceWriter {
  readonly #o: ServiceReflectionOptions;
  readonly #ports = new GatewayPorts();
  /** Reflected ports by `namespace/name`. */
  readonly #reflected = new Map<string, GatewayService[]>();
  #address?: string;
  /** The gateway address B last refused in an EndpointSlice (warned once). */
  #refused?: string;
  #restored?: Promise<void>;
  /** Services found reflected in B at {@link restore}, not yet swept, by `namespace/name`. */
  readonly #found = new Set<string>();
  /** Slice writes in order, so the gateway's latest address is the one that stays. */
  #sliceWrites: Promise<void> = Promise.resolve();

  constructor(options: ServiceReflectionOptions) {
    this.#o = options;
  }

  /** The gateway ports already in B's EndpointSlices (after a restart); once, before writes. */
  restore(signal: AbortSignal): Promise<void> {
    this.#restored ??= this.#list(signal).catch((err) => {
      this.#restored = undefined; // tried again by the next write
      throw err;
    });
    return this.#restored;
  }

  /** The gateway pod's IP in B (undefined: none now): every slice's endpoint. */
  async setGatewayAddress(address: string | undefined, signal: AbortSignal): Promise<void> {
    if (address === this.#address) return;
    this.#address = address;
    for (const key of this.#reflected.keys()) {
      const [namespace, name] = key.split("/");
      await this.#writeSlice(namespace, name, signal).catch((err) => {
        this.#o.log.warn("could not point the EndpointSlice of {service} at the gateway: {err}", {
          service: key,
          err: String(err),
        });
      });
    }
  }

  async write(namespace: string, source: Service, signal: AbortSignal): Promise<void> {
    const name = source.metadata!.name!;
    const ports = reflectedPorts(source);
    if (ports.length === 0) return await this.remove(namespace, name, signal);
    await this.restore(signal);
    const gatewayPorts = this.#ports.assign(namespace, name, ports.map(portKey));
    const service = reflectedService(source, this.#o.nodeName, gatewayPorts);
    const api = this.#o.downstream.services;
    try {
      await api.create(namespace, service, { signal });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      const current = await api.get(namespace, name, { signal });
      if (current.metadata?.labels?.[MARKS.role] !== REFLECTED_ROLE) {
        this.#ports.release(namespace, name);
        this.#o.log.warn("not reflecting Service {namespace}/{name}: B has its own of that name", {
          namespace,
          name,
        });
        return;
      }
      const owner = current.metadata?.labels?.[MARKS.node];
      if (owner !== this.#node) {
        // Its targetPort and endpoint are the other gateway's: one gateway node per namespace.
        this.#ports.release(namespace, name);
        if (this.#reflected.delete(`${namespace}/${name}`)) this.#announce();
        this.#o.log.warn(
          "not reflecting Service {namespace}/{name} for node {node}: node {owner}'s gateway reflects it there (one gateway node per namespace of B)",
          { namespace, name, node: this.#node, owner: owner ?? "none" },
        );
        return;
      }
      // A merge patch keeps the ClusterIP B gave it.
      await api.patch(namespace, name, { type: "merge", body: service, signal });
    }
    this.#reflected.set(
      `${namespace}/${name}`,
      ports.map((p) => ({
        namespace,
        name,
        port: p.port,
        gatewayPort: gatewayPorts.get(portKey(p))!,
      })),
    );
    await this.#writeSlice(namespace, name, signal);
    this.#announce();
  }

  async remove(namespace: string, name: string, signal: AbortSignal): Promise<void> {
    const held = this.#reflected.delete(`${namespace}/${name}`);
    this.#ports.release(namespace, name);
    if (held) this.#announce();
    await this.#inOrder(() =>
      removeOurs(this.#o.downstream.endpointSlices, namespace, sliceName(name), this.#node, signal)
    );
    await removeOurs(this.#o.downstream.services, namespace, name, this.#node, signal);
  }

  /**
   * After `namespace`'s Services of A were written (ServiceMirror's `track` resolved): removes
   * what an earlier run reflected there for Services A no longer has (deleted while away).
   */
  async sweep(namespace: string, signal: AbortSignal): Promise<void> {
    for (const key of this.#found) {
      const [ns, name] = key.split("/");
      if (ns !== namespace) continue;
      this.#found.delete(key);
      if (!this.#reflected.has(key)) await this.remove(ns, name, signal);
    }
  }

  /** Every reflected port (what the gateway serves). */
  services(): GatewayService[] {
    return [...this.#reflected.values()].flat();
  }

  /** This node as its objects' `vkubelet.io/virtual-node` label says. */
  get #node(): string {
    return markLabels(this.#o.nodeName, "")[MARKS.node];
  }

  #announce(): void {
    this.#o.onServices(this.services());
  }

  async #list(signal: AbortSignal): Promise<void> {
    const list = await this.#o.downstream.endpointSlices.list({
      labelSelector: `${nodeSelector(this.#o.nodeName)},${MARKS.role}=${REFLECTED_ROLE}`,
      signal,
    });
    for (const slice of list.items) {
      const service = slice.metadata?.labels?.["kubernetes.io/service-name"];
      const namespace = slice.metadata?.namespace;
      if (!service || !namespace) continue;
      this.#found.add(`${namespace}/${service}`);
      this.#ports.restore(
        namespace,
        service,
        (slice.ports ?? []).map((p) => [p.name ?? "", p.port ?? 0] as const),
      );
    }
  }

  /** Writes the slice as things are when its turn comes: one slice write at a time. */
  #writeSlice(namespace: string, name: string, signal: AbortSignal): Promise<void> {
    return this.#inOrder(() => this.#putCurrentSlice(namespace, name, signal));
  }

  #inOrder(write: () => Promise<void>): Promise<void> {
    const next = this.#sliceWrites.then(write);
    this.#sliceWrites = next.catch(() => {});
    return next;
  }

  async #putCurrentSlice(namespace: string, name: string, signal: AbortSignal): Promise<void> {
    if (!this.#reflected.has(`${namespace}/${name}`)) return;
    const ports = this.#ports.of(namespace, name);
    const slice = gatewaySlice(namespace, name, this.#o.nodeName, ports, this.#address);
    try {
      await this.#putSlice(namespace, slice, signal);
    } catch (err) {
      // B refuses some addresses in an EndpointSlice (loopback, link-local): keep the ports.
      if (!isInvalid(err) || !this.#address) throw err;
      if (this.#refused !== this.#address) {
        this.#refused = this.#address;
        this.#o.log.warn(
          "B refuses the gateway pod's address {address} as an endpoint; the reflected Services have none: {err}",
          { address: this.#address, err: String(err) },
        );
      }
      const empty = gatewaySlice(namespace, name, this.#o.nodeName, ports, undefined);
      await this.#putSlice(namespace, empty, signal);
    }
  }

  async #putSlice(namespace: string, slice: EndpointSlice, signal: AbortSignal): Promise<void> {
    const api = this.#o.downstream.endpointSlices;
    try {
      await api.create(namespace, slice, { signal });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      const current = await api.get(namespace, slice.metadata!.name!, { signal });
      const owner = current.metadata?.labels?.[MARKS.node];
      if (current.metadata?.labels?.[MARKS.role] !== REFLECTED_ROLE || owner !== this.#node) {
        throw new Error(
          `EndpointSlice ${namespace}/${slice.metadata!.name} is not node ${this.#node}'s ` +
            `(${owner ? `node ${owner}'s` : "B's own"}): left alone`,
        );
      }
      await api.patch(namespace, slice.metadata!.name!, { type: "merge", body: slice, signal });
    }
  }
}

/** The Service ports the gateway carries: TCP only, and none of a headless or ExternalName one. */
export function reflectedPorts(source: Service): ServicePort[] {
  const spec = source.spec ?? {};
  if (spec.type === "ExternalName" || !spec.clusterIP || spec.clusterIP === "None") return [];
  return (spec.ports ?? []).filter((p) => (p.protocol ?? "TCP") === "TCP");
}

/** The selectorless Service in B for A's `source` (ports by {@link portKey} → gateway port). */
export function reflectedService(
  source: Service,
  nodeName: string,
  gatewayPorts: Map<string, number>,
): Service {
  const namespace = source.metadata?.namespace ?? "";
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: source.metadata?.name,
      namespace,
      labels: { ...markLabels(nodeName, namespace), [MARKS.role]: REFLECTED_ROLE },
      annotations: { [MARKS.name]: source.metadata?.name ?? "" },
    },
    spec: {
      type: "ClusterIP",
      // Explicitly none: a merge patch over an older copy with a selector drops it.
      selector: null as unknown as undefined,
      ports: reflectedPorts(source).map((p) => ({
        name: p.name,
        protocol: "TCP",
        port: p.port,
        targetPort: gatewayPorts.get(portKey(p)),
      })),
      sessionAffinity: source.spec?.sessionAffinity,
    },
  };
}

/** The name of the EndpointSlice of the reflected Service `name`. */
export function sliceName(name: string): string {
  return `${name}-gateway`;
}

/** The EndpointSlice of a reflected Service: the gateway's address with its ports. */
export function gatewaySlice(
  namespace: string,
  name: string,
  nodeName: string,
  ports: Map<string, number>,
  address: string | undefined,
): EndpointSlice {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: sliceName(name),
      namespace,
      labels: {
        ...markLabels(nodeName, namespace),
        [MARKS.role]: REFLECTED_ROLE,
        "kubernetes.io/service-name": name,
        "endpointslice.kubernetes.io/managed-by": SLICE_MANAGER,
      },
    },
    addressType: address?.includes(":") ? "IPv6" : "IPv4",
    endpoints: address ? [{ addresses: [address], conditions: { ready: true } }] : [],
    ports: [...ports].map(([key, port]) => ({ name: key, protocol: "TCP", port })),
  };
}

/** Deletes the object when it is a reflection of `node` (its label value), else leaves it. */
async function removeOurs<T extends { metadata?: { labels?: Record<string, string> } }>(
  api: Pick<NamespacedApi<T & { metadata?: { uid?: string } }>, "get" | "delete">,
  namespace: string,
  name: string,
  node: string,
  signal: AbortSignal,
): Promise<void> {
  const current = await api.get(namespace, name, { signal }).catch((err) => {
    if (isKubeNotFound(err)) return undefined;
    throw err;
  });
  const labels = current?.metadata?.labels;
  if (labels?.[MARKS.role] !== REFLECTED_ROLE || labels?.[MARKS.node] !== node) return; // not ours
  await api.delete(namespace, name, { signal, preconditions: { uid: current?.metadata?.uid } })
    .catch((err) => {
      if (!isKubeNotFound(err)) throw err;
    });
}
