/**
 * Service-link environment variables, as the kubelet builds them
 * (kubernetes/kubernetes pkg/kubelet/kubelet_pods.go `getServiceEnvVarMap` and
 * pkg/kubelet/envvars/envvars.go `FromServices`): `{SVC}_SERVICE_HOST`, `{SVC}_SERVICE_PORT`,
 * `{SVC}_SERVICE_PORT_{NAME}` and the Docker-link style `{SVC}_PORT`, `{SVC}_PORT_{P}_{PROTO}`
 * (+ `_PROTO`, `_PORT`, `_ADDR`) for every service with a cluster IP in the pod's namespace when
 * `enableServiceLinks` is on, and for `kubernetes` in `default` always.
 * @module
 */
import type { Service } from "kubernetes-types/core/v1.d.ts";

/** Service env vars for a pod in `namespace`, in a stable order (by service, then as built). */
export function serviceEnvVars(
  services: Iterable<Service>,
  namespace: string,
  enableServiceLinks: boolean,
): Map<string, string> {
  const chosen = new Map<string, Service>();
  for (const service of services) {
    if (!hasClusterIp(service)) continue;
    const name = service.metadata?.name ?? "";
    const ns = service.metadata?.namespace ?? "";
    if (ns === "default" && name === "kubernetes") {
      if (!chosen.has(name)) chosen.set(name, service);
    } else if (ns === namespace && enableServiceLinks) {
      chosen.set(name, service);
    }
  }
  const vars = new Map<string, string>();
  for (const name of [...chosen.keys()].sort()) {
    for (const [key, value] of varsOf(chosen.get(name)!)) vars.set(key, value);
  }
  return vars;
}

function hasClusterIp(service: Service): boolean {
  const ip = service.spec?.clusterIP;
  return ip !== undefined && ip !== "" && ip !== "None";
}

/** `my-svc` -> `MY_SVC`. */
function envName(name: string): string {
  return name.toUpperCase().replaceAll("-", "_");
}

/**
 * The vars of each Service object, built once: informer objects are replaced, never changed, so
 * every pod of a namespace shares the same strings instead of a copy each (the `kubernetes`
 * Service's seven vars are in every pod).
 */
const built = new WeakMap<Service, readonly [string, string][]>();

function varsOf(service: Service): readonly [string, string][] {
  let vars = built.get(service);
  if (!vars) built.set(service, vars = buildVars(service));
  return vars;
}

function buildVars(service: Service): [string, string][] {
  const prefix = envName(service.metadata?.name ?? "");
  const ip = service.spec!.clusterIP!;
  const ports = service.spec?.ports ?? [];
  const vars: [string, string][] = [[`${prefix}_SERVICE_HOST`, ip]];
  if (ports.length === 0) return vars;
  vars.push([`${prefix}_SERVICE_PORT`, String(ports[0].port)]);
  for (const port of ports) {
    if (port.name) vars.push([`${prefix}_SERVICE_PORT_${envName(port.name)}`, String(port.port)]);
  }
  const host = ip.includes(":") ? `[${ip}]` : ip;
  for (const [i, port] of ports.entries()) {
    const protocol = port.protocol || "TCP";
    const url = `${protocol.toLowerCase()}://${host}:${port.port}`;
    // Docker gives the first port the unqualified name.
    if (i === 0) vars.push([`${prefix}_PORT`, url]);
    const portPrefix = `${prefix}_PORT_${port.port}_${protocol.toUpperCase()}`;
    vars.push(
      [portPrefix, url],
      [`${portPrefix}_PROTO`, protocol.toLowerCase()],
      [`${portPrefix}_PORT`, String(port.port)],
      [`${portPrefix}_ADDR`, ip],
    );
  }
  return vars;
}
