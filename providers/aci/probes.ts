/**
 * A container's liveness and readiness probes as ACI's `ContainerProbe` (api-version
 * 2023-05-01): `exec` and `httpGet` (path, port — a named port resolved against the
 * container's ports —, scheme, headers) with the timings. ACI runs them itself. What its probe
 * cannot express is refused with the field named rather than dropped: `tcpSocket` and `grpc`
 * (the specification's probe has exec and httpGet only), `httpGet.host` (ACI probes the
 * container's own address), and startup probes (ACI has none, and liveness would then act
 * before the startup probe let it).
 * @module
 */
import type { Container, Probe } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError } from "../../provider/mod.ts";

/** ACI's `ContainerProbe`. */
export interface AciProbe {
  exec?: { command: string[] };
  httpGet?: {
    port: number;
    path?: string;
    scheme?: "http" | "https";
    httpHeaders?: { name: string; value: string }[];
  };
  initialDelaySeconds?: number;
  periodSeconds?: number;
  failureThreshold?: number;
  successThreshold?: number;
  timeoutSeconds?: number;
}

function portOf(c: Container, port: number | string, where: string): number {
  if (typeof port === "number") return port;
  const named = c.ports?.find((p) => p.name === port);
  if (named) return named.containerPort;
  if (/^\d+$/.test(port)) return Number(port);
  throw new InvalidInputError(
    `${where}.httpGet.port: the container has no port named ${port}; name it in ports or give the number`,
  );
}

function probeOf(c: Container, probe: Probe, where: string): AciProbe {
  if (probe.tcpSocket || probe.grpc) {
    const kind = probe.tcpSocket ? "tcpSocket" : "grpc";
    throw new InvalidInputError(
      `${where}.${kind}: ACI's probes are exec and httpGet only (api-version 2023-05-01 ContainerProbe); use an exec probe that checks the port, or httpGet`,
    );
  }
  const timings = {
    initialDelaySeconds: probe.initialDelaySeconds,
    periodSeconds: probe.periodSeconds,
    failureThreshold: probe.failureThreshold,
    successThreshold: probe.successThreshold,
    timeoutSeconds: probe.timeoutSeconds,
  };
  const defined = Object.fromEntries(Object.entries(timings).filter(([, v]) => v !== undefined));
  if (probe.exec) {
    if (!probe.exec.command?.length) {
      throw new InvalidInputError(`${where}.exec.command: an exec probe needs a command`);
    }
    return { exec: { command: probe.exec.command }, ...defined };
  }
  const get = probe.httpGet;
  if (!get) throw new InvalidInputError(`${where}: a probe needs exec or httpGet for ACI`);
  if (get.host) {
    throw new InvalidInputError(
      `${where}.httpGet.host: ACI probes the container's own address and has no host field; remove host (a Host header goes in httpHeaders)`,
    );
  }
  const headers = get.httpHeaders ?? [];
  return {
    httpGet: {
      port: portOf(c, get.port, where),
      ...(get.path ? { path: get.path } : {}),
      ...(get.scheme ? { scheme: get.scheme === "HTTPS" ? "https" : "http" } : {}),
      ...(headers.length ? { httpHeaders: headers.map((h) => ({ ...h })) } : {}),
    },
    ...defined,
  };
}

/** The container's probes as ACI's `livenessProbe` and `readinessProbe`. */
export function probesFor(c: Container, where: string) {
  if (c.startupProbe) {
    throw new InvalidInputError(
      `${where}.startupProbe: ACI has no startup probe, and its liveness probe would act before the startup probe allowed; use livenessProbe.initialDelaySeconds instead`,
    );
  }
  return {
    ...(c.livenessProbe
      ? { livenessProbe: probeOf(c, c.livenessProbe, `${where}.livenessProbe`) }
      : {}),
    ...(c.readinessProbe
      ? { readinessProbe: probeOf(c, c.readinessProbe, `${where}.readinessProbe`) }
      : {}),
  };
}
