/**
 * `serviceAccountToken: upstream`: the pod in B holds a token of A, so its client must dial A's
 * apiserver, not the `kubernetes` Service ClusterIP of A that the core's service links carry (B
 * cannot route it; liqo#1185). With `upstreamApiServer` set, the `KUBERNETES_SERVICE_*` and
 * `KUBERNETES_PORT*` variables (pkg/kubelet/envvars `FromServices`, for the `kubernetes`
 * Service) name that address instead.
 * @module
 */
import type { Container, EnvVar } from "kubernetes-types/core/v1.d.ts";

const KUBERNETES_VARS =
  /^KUBERNETES_(SERVICE_HOST|SERVICE_PORT|SERVICE_PORT_HTTPS|PORT(_\d+_TCP(_PROTO|_PORT|_ADDR)?)?)$/;

/** The host and port of `url` (`https://host:port`), IPv6 without brackets; port 443 by default. */
export function apiServerAddress(url: string): { host: string; port: string } {
  const parsed = new URL(url);
  return { host: parsed.hostname.replace(/^\[(.*)\]$/, "$1"), port: parsed.port || "443" };
}

/** `container` with the `kubernetes` Service variables pointing at `address`. */
export function withApiServerEnv(
  container: Container,
  address: { host: string; port: string },
): Container {
  const { host, port } = address;
  const hostPort = host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
  const env: EnvVar[] = [
    ...(container.env ?? []).filter((v) => !KUBERNETES_VARS.test(v.name)),
    { name: "KUBERNETES_SERVICE_HOST", value: host },
    { name: "KUBERNETES_SERVICE_PORT", value: port },
    { name: "KUBERNETES_SERVICE_PORT_HTTPS", value: port },
    { name: "KUBERNETES_PORT", value: `tcp://${hostPort}` },
    { name: `KUBERNETES_PORT_${port}_TCP`, value: `tcp://${hostPort}` },
    { name: `KUBERNETES_PORT_${port}_TCP_PROTO`, value: "tcp" },
    { name: `KUBERNETES_PORT_${port}_TCP_PORT`, value: port },
    { name: `KUBERNETES_PORT_${port}_TCP_ADDR`, value: host },
  ];
  return { ...container, env };
}
