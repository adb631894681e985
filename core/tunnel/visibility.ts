/**
 * Which of the cluster's Services a pod may reach through the tunnel (its own agent's or the
 * gateway's): those of its namespace and `default/kubernetes`, as its env vars would name them.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { ServiceList, TunnelService } from "./protocol.ts";

/** A Service as vkubelet knows it. */
export interface ClusterService extends TunnelService {
  clusterIP: string;
}

/** The cluster's Services (an informer in vkubelet, a list in tests). */
export interface ServiceSource {
  list(namespace: string): ClusterService[];
  /** Calls `changed` after any Service changes; returns the unsubscribe. */
  subscribe(changed: () => void): () => void;
}

/** The ClusterIP of the Service `wanted` names, if `pod` may call it; else throws why not. */
export function serviceTarget(
  services: ServiceSource,
  pod: Pod,
  wanted: { namespace: string; name: string; port: number },
): string {
  const own = pod.metadata?.namespace ?? "default";
  const key = `${own}/${pod.metadata?.name ?? ""}`;
  if (!visible(own, wanted.namespace, wanted.name)) {
    throw new Error(
      `Pod ${key} may not reach Service ${wanted.namespace}/${wanted.name}: a pod reaches ` +
        `the Services of its namespace (${own}) and default/kubernetes`,
    );
  }
  const service = services.list(wanted.namespace).find((s) => s.name === wanted.name);
  if (!service) throw new Error(`Service ${wanted.namespace}/${wanted.name} does not exist`);
  if (!service.ports.some((p) => p.port === wanted.port && p.protocol === "TCP")) {
    throw new Error(`Service ${wanted.namespace}/${wanted.name} has no TCP port ${wanted.port}`);
  }
  return service.clusterIP;
}

/** What `pod` may see, as its agent is told: its namespace's Services and `default/kubernetes`. */
export function serviceList(
  services: ServiceSource,
  pod: Pod,
  clusterDomain = "cluster.local",
): ServiceList {
  const namespace = pod.metadata?.namespace ?? "default";
  const strip = ({ namespace, name, ports }: ClusterService): TunnelService => ({
    namespace,
    name,
    ports: ports.filter((p) => p.protocol === "TCP"),
  });
  const own = services.list(namespace).map(strip);
  const api = namespace === "default"
    ? []
    : services.list("default").filter((s) => s.name === "kubernetes").map(strip);
  return { namespace, clusterDomain, services: [...own, ...api] };
}

function visible(own: string, namespace: string, name: string): boolean {
  return namespace === own || (namespace === "default" && name === "kubernetes");
}
