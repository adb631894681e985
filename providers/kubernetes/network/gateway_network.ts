/**
 * `gateway` (issue #64 item 4): the kubernetes provider across a non-flat boundary. One agent,
 * deployed in B ({@link GatewayDeployment}), dials vkubelet and carries every forwarded pod's
 * streams: each pod gets an IP in A ({@link PodAddresses}) that reaches it in B, and A's Services
 * are reflected into B pointing at the gateway ({@link ServiceReflection}), which dials them in A
 * from the calling pod's A-side IP.
 * @module
 */
import type { EndpointSlice } from "kubernetes-types/discovery/v1.d.ts";
import { type KubeClient, NamespacedApi } from "../../../k8s/mod.ts";
import type {
  Clock,
  GatewayService,
  Logger,
  PodNetworkGateway,
  PodNetworkHandle,
} from "../../../provider/mod.ts";
import type { KubernetesConfig } from "../config.ts";
import { GatewayDeployment } from "./gateway_deployment.ts";
import { PodAddresses } from "./pod_addresses.ts";
import { ServiceReflection } from "./service_reflection.ts";

/** What {@link GatewayNetwork} needs. */
export interface GatewayNetworkOptions {
  config: KubernetesConfig & { gateway: NonNullable<KubernetesConfig["gateway"]> };
  downstream: KubeClient;
  podNetwork: Pick<Required<PodNetworkHandle>, "gateway">;
  nodeName: string;
  clock: Clock;
  log: Logger;
  /** A pod (by upstream `ns/name`) got its A-side IP: report its status again. */
  onAttached: (key: string) => void;
}

/** The gateway, the pods' A-side IPs and the reflected Services, wired together. */
export class GatewayNetwork {
  readonly deployment: GatewayDeployment;
  readonly addresses: PodAddresses;
  /** The writer of A's Services into B, for ServiceMirror. */
  readonly reflection: ServiceReflection;
  #gateway?: PodNetworkGateway;
  #services?: GatewayService[];
  #address?: string;
  #signal?: AbortSignal;

  constructor(options: GatewayNetworkOptions) {
    const { config, downstream, nodeName, clock, log } = options;
    this.deployment = new GatewayDeployment({
      config: config.gateway,
      placement: config,
      downstream,
      podNetwork: options.podNetwork,
      nodeName,
      clock,
      log,
      onAddress: (address) => {
        this.#address = address;
        if (!this.#signal) return;
        void this.reflection.setGatewayAddress(address, this.#signal);
      },
    });
    this.addresses = new PodAddresses({
      gateway: this.deployment.gateway,
      log,
      onAttached: options.onAttached,
    });
    this.reflection = new ServiceReflection({
      downstream: {
        services: downstream.services,
        endpointSlices: new NamespacedApi<EndpointSlice>(downstream, {
          group: "discovery.k8s.io",
          version: "v1",
          plural: "endpointslices",
        }),
      },
      nodeName,
      log,
      onServices: (services) => {
        this.#services = services;
        this.#gateway?.setServices(services);
      },
    });
    void this.deployment.gateway.then((gateway) => {
      this.#gateway = gateway;
      if (this.#services) gateway.setServices(this.#services);
    }, () => {});
  }

  /** Deploys the gateway and keeps it, and the slices' endpoint, in step until `signal`. */
  run(signal: AbortSignal): Promise<void> {
    this.#signal = signal;
    if (this.#address) void this.reflection.setGatewayAddress(this.#address, signal);
    return this.deployment.run(signal);
  }
}
