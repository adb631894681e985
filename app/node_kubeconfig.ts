/**
 * The node's own kubeconfig beside TLS bootstrap (`--kubeconfig Y --bootstrap-kubeconfig X`, the
 * pair every kubeadm node runs with), read and written as the kubelet does
 * (kubernetes/kubernetes pkg/kubelet/certificate/bootstrap/bootstrap.go): Y is used as it is
 * when it exists and every certificate of its client credential is still valid
 * (`isClientConfigStillValid`); a missing Y, or one that cannot be read or whose certificate
 * expired, falls back to the bootstrap credential, and once the node has a client certificate Y
 * is written (0600, atomically) to name that certificate's file in `--cert-dir`
 * (`writeKubeconfigFromBootstrapping`), so that later rotations need no rewrite.
 * @module
 */
import { X509Certificate } from "node:crypto";
import { resolve } from "node:path";
import { stringify } from "yaml";
import type { Clock } from "../base/clock.ts";
import type { Logger } from "../base/log.ts";
import type { Config } from "./config/config.ts";
import { type ConnectionConfig, KubeConfigError, loadKubeConfig } from "../k8s/mod.ts";
import {
  type CertificateStore,
  type KeyPair,
  storedPairProblem,
  writeAtomically,
} from "../x509/mod.ts";

/** What {@link readNodeKubeconfig} found: a usable credential, or why not. */
export type NodeKubeconfig =
  | { usable: true; connection: ConnectionConfig; pair: KeyPair; validTo: string }
  | { usable: false; missing: boolean; problem: string };

/**
 * Reads `path` as the node's kubeconfig. Never throws: anything wrong with the file is a reason
 * to bootstrap, which the caller reports (the kubelet logs it and bootstraps too).
 */
export async function readNodeKubeconfig(path: string, clock: Clock): Promise<NodeKubeconfig> {
  try {
    await Deno.stat(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) {
      return { usable: false, missing: true, problem: "does not exist yet" };
    }
    return { usable: false, missing: false, problem: `cannot be read: ${messageOf(err)}` };
  }
  let connection: ConnectionConfig;
  try {
    // Only this file: $KUBECONFIG and the in-cluster account are no node credential.
    connection = await loadKubeConfig({ kubeconfig: path, env: {}, clock });
  } catch (err) {
    return { usable: false, missing: false, problem: `cannot be used: ${messageOf(err)}` };
  }
  const certificate = connection.credentials?.clientCertificate;
  if (!certificate) {
    return { usable: false, missing: false, problem: "holds no client certificate" };
  }
  // One file may hold the chain and the key (`kubelet-client-current.pem`): keep the chain.
  const blocks = certificate.cert.match(
    /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\r?\n?/g,
  );
  if (!blocks) return { usable: false, missing: false, problem: "holds no PEM certificate" };
  const problem = expiryProblem(blocks, clock.now());
  if (problem) return { usable: false, missing: false, problem };
  const certPem = blocks.map((b) => b.endsWith("\n") ? b : `${b}\n`).join("");
  const keyPem = certificate.key.match(
    /-----BEGIN ([A-Z ]*)PRIVATE KEY-----[\s\S]*?-----END \1PRIVATE KEY-----/,
  )?.[0];
  if (!keyPem) return { usable: false, missing: false, problem: "holds no PEM private key" };
  connection.credentials = { clientCertificate: { cert: certPem, key: `${keyPem}\n` } };
  return {
    usable: true,
    connection,
    pair: { certPem, keyPem: `${keyPem}\n` },
    validTo: new X509Certificate(certPem).validTo,
  };
}

/** Why a certificate chain cannot be presented at `nowMs`: a block that does not parse, or one expired. */
function expiryProblem(blocks: string[], nowMs: number): string | undefined {
  for (const block of blocks) {
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(block);
    } catch (err) {
      return `holds a client certificate that cannot be parsed: ${messageOf(err)}`;
    }
    const notAfter = Date.parse(cert.validTo);
    if (nowMs > notAfter) {
      return `holds a client certificate that expired at ${new Date(notAfter).toISOString()}`;
    }
  }
  return undefined;
}

/**
 * Writes a kubeconfig at `path` for the cluster of `connection`, whose user is the certificate
 * and key in `certPath` (one file holds both, as `kubelet-client-current.pem` does), named by
 * path so that a rotation is picked up by whoever reads the kubeconfig next.
 */
export async function writeNodeKubeconfig(
  path: string,
  connection: Pick<ConnectionConfig, "server" | "caCerts" | "proxyUrl">,
  certPath: string,
): Promise<void> {
  const cluster: Record<string, string> = { server: connection.server };
  if (connection.caCerts?.length) {
    cluster["certificate-authority-data"] = base64(connection.caCerts.join("\n"));
  }
  if (connection.proxyUrl) cluster["proxy-url"] = connection.proxyUrl;
  const text = stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "default-cluster", cluster }],
    users: [{
      name: "default-auth",
      // Absolute: a relative path would be read from the kubeconfig's own directory.
      user: { "client-certificate": resolve(certPath), "client-key": resolve(certPath) },
    }],
    contexts: [{
      name: "default-context",
      context: { cluster: "default-cluster", user: "default-auth", namespace: "default" },
    }],
    "current-context": "default-context",
  }, { lineWidth: 0 });
  await writeAtomically(path, text);
}

/**
 * The node's kubeconfig, written once the node has a certificate: to `--kubeconfig` when given
 * (the kubelet's `writeKubeconfigFromBootstrapping`; failing to is fatal there too), else beside
 * the certificate as `NODE.kubeconfig` for the operator's use (a warning only).
 */
export async function writeBootstrappedKubeconfig(
  config: Config,
  connection: ConnectionConfig,
  certPath: string,
  log: Logger,
): Promise<void> {
  const dir = certPath.slice(0, certPath.lastIndexOf("/"));
  const path = config.kubeconfig ?? `${dir}/${config.nodeName}.kubeconfig`;
  try {
    await writeNodeKubeconfig(path, connection, certPath);
    log.info("wrote {path}, naming the client certificate {cert}", { path, cert: certPath });
  } catch (err) {
    if (!config.kubeconfig) {
      log.warn("cannot write the node kubeconfig {path}: {err}", { path, err });
      return;
    }
    throw new KubeConfigError(
      `cannot be written: ${
        err instanceof Error ? err.message : String(err)
      }; let vkubelet write there, or point --kubeconfig at a writable path`,
      { path, cause: err },
    );
  }
}

/**
 * `store`, falling back to the certificate of a still-valid `--kubeconfig` while the store holds
 * nothing usable: client-go's certificate manager starts from the kubeconfig's certificate when
 * its store is empty (util/certificate/certificate_manager.go `getCurrentCertificate`).
 */
export function storeOrKubeconfig(
  store: CertificateStore,
  fallback: { path: string; pair: KeyPair },
  names: { nodeName: string; dnsNames: string[]; ipAddresses: string[] },
  clock: Clock,
): CertificateStore {
  let fromFallback = false;
  return {
    get path() {
      return fromFallback ? fallback.path : store.path;
    },
    async load() {
      const stored = await store.load().catch(() => undefined);
      fromFallback = !stored || storedPairProblem(stored, names, clock.now()) !== undefined;
      return fromFallback ? fallback.pair : stored;
    },
    async save(pair) {
      await store.save(pair);
      fromFallback = false;
    },
  };
}

function base64(text: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
