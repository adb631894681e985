/**
 * Checks of the configuration against the host that need no cluster: the ports can be bound,
 * the serving certificate and key parse and belong together, the client CA parses. They run
 * before the kubeconfig is used and before the provider is loaded, so that a config that cannot
 * work exits 2 naming the option without having touched the node, the host or the cluster.
 * @module
 */
import { X509Certificate } from "node:crypto";
import type { Config } from "./config/config.ts";
import { parseHostPort } from "./config/schema.ts";
import { checkPair } from "../x509/certificate_source.ts";

/** What {@link preflight} found. */
export interface PreflightResult {
  /** Every problem, each naming the option to fix; empty when all is well. */
  problems: string[];
  /**
   * True when every problem is one that may go away by itself (a port still in use by a process
   * that is stopping): main.ts exits 1 then, which the shipped systemd unit restarts, instead of
   * 2, which it does not.
   */
  transient: boolean;
}

/** Checks the config against this host; see the module doc. */
export async function preflight(config: Config): Promise<PreflightResult> {
  const problems: string[] = [];
  let inUse = 0;
  const bind = (hostname: string, port: number, option: string) => {
    const problem = bindProblem(hostname, port);
    if (!problem) return;
    problems.push(`${option}: ${problem.message}`);
    if (problem.inUse) inUse++;
  };
  if (config.port !== 0) {
    bind(config.listenAddress, config.port, `--port ${config.port} on ${config.listenAddress}`);
  }
  const metrics = config.metricsAddr ? parseHostPort(config.metricsAddr) : undefined;
  if (metrics && metrics.port !== 0) {
    bind(metrics.hostname, metrics.port, `--metrics-addr ${config.metricsAddr}`);
  }
  if (config.tlsCertFile && config.tlsPrivateKeyFile) {
    problems.push(...await servingPairProblems(config.tlsCertFile, config.tlsPrivateKeyFile));
  }
  if (config.clientCaFile) {
    const text = await readProblem(config.clientCaFile, "--client-ca-file");
    if (typeof text !== "string") problems.push(text.problem);
    else if (!parsesAsCertificate(text)) {
      problems.push(
        `--client-ca-file ${config.clientCaFile} does not hold a PEM certificate; give the CA bundle that signs client certificates`,
      );
    }
  }
  return { problems, transient: problems.length > 0 && inUse === problems.length };
}

/** Why `hostname:port` cannot be listened on, or undefined if it can (the port is let go). */
function bindProblem(
  hostname: string,
  port: number,
): { message: string; inUse?: boolean } | undefined {
  try {
    Deno.listen({ hostname, port }).close();
    return undefined;
  } catch (err) {
    if (err instanceof Deno.errors.AddrInUse) {
      return {
        message: "the address is already in use; stop whatever listens there or pick another port",
        inUse: true,
      };
    }
    if (err instanceof Deno.errors.PermissionDenied || err instanceof Deno.errors.NotCapable) {
      return { message: "permission denied; ports below 1024 need root or CAP_NET_BIND_SERVICE" };
    }
    if (err instanceof Deno.errors.AddrNotAvailable) {
      return { message: "no interface of this host has that address; check --listen-address" };
    }
    return { message: `cannot listen: ${err instanceof Error ? err.message : String(err)}` };
  }
}

async function servingPairProblems(certFile: string, keyFile: string): Promise<string[]> {
  const cert = await readProblem(certFile, "--tls-cert-file");
  const key = await readProblem(keyFile, "--tls-private-key-file");
  const problems = [cert, key].flatMap((r) => typeof r === "string" ? [] : [r.problem]);
  if (problems.length > 0) return problems;
  try {
    checkPair({ certPem: cert as string, keyPem: key as string }, {
      cert: `--tls-cert-file ${certFile}`,
      key: `--tls-private-key-file ${keyFile}`,
    });
    return [];
  } catch (err) {
    return [err instanceof Error ? err.message : String(err)];
  }
}

async function readProblem(path: string, option: string): Promise<string | { problem: string }> {
  try {
    return await Deno.readTextFile(path);
  } catch (err) {
    const why = err instanceof Deno.errors.NotFound
      ? "does not exist"
      : err instanceof Deno.errors.PermissionDenied
      ? "cannot be read (permission denied)"
      : `cannot be read: ${err instanceof Error ? err.message : String(err)}`;
    return { problem: `${option} ${path} ${why}; fix the path or the file's permissions` };
  }
}

function parsesAsCertificate(pem: string): boolean {
  try {
    new X509Certificate(pem);
    return true;
  } catch {
    return false;
  }
}
