/**
 * TLS bootstrap and client-certificate rotation, as the kubelet does them
 * (kubernetes/kubernetes pkg/kubelet/certificate/bootstrap/bootstrap.go `LoadClientCert`,
 * cmd/kubelet/app/server.go `buildKubeletClientConfig`, pkg/kubelet/certificate/kubelet.go
 * `NewKubeletClientCertificateManager`): with `--bootstrap-kubeconfig`, a valid client
 * certificate for this node in `--cert-dir` is used as it is; without one, a CSR with signer
 * `kubernetes.io/kube-apiserver-client-kubelet` is filed with the bootstrap credential and
 * start-up waits for it. The certificate and a kubeconfig naming it are written to the cert dir
 * (0600, atomically), and vkubelet talks to the apiserver as `system:node:<name>` from then on.
 * With `--rotate-certificates` a new certificate is requested at 70-90 % of the lifetime, now
 * as the node itself, and the client presents it on its next request without a restart.
 * @module
 */
import { X509Certificate } from "node:crypto";
import type { Clock } from "../base/clock.ts";
import { getLogger } from "../base/log.ts";
import type { Config } from "./config/config.ts";
import {
  ClientCertificateSource,
  type ConnectionConfig,
  isForbidden,
  isKubeApiError,
  isUnauthorized,
  KubeClient,
  loadKubeConfig,
} from "../k8s/mod.ts";
import {
  type CsrApi,
  csrCertificate,
  defaultCertDirs,
  fileCertificateStore,
  type KeyPair,
  writeAtomically,
} from "../x509/mod.ts";

/** Test hooks for a bounded rotation test; production leaves them unset. */
export interface NodeIdentityHooks {
  /** Asked-for lifetime of client certificates (`expirationSeconds`, at least 600). */
  clientCertificateExpirationSeconds?: number;
  /** Where in the lifetime to renew; default a random value in [0.7, 0.9). */
  clientCertificateRenewFraction?: () => number;
  /** Told of every client certificate the node starts to use. */
  onClientCertificate?: (pair: KeyPair) => void;
}

/** The node's connection, and the rotation running behind it. */
export interface NodeIdentity {
  connection: ConnectionConfig;
  /** Stops rotating and frees the bootstrap connection. */
  stop(): Promise<void>;
}

/** Obtains (or reuses) the node's client certificate; resolves once there is one. */
export async function startNodeIdentity(
  config: Config,
  deps: { clock: Clock; signal: AbortSignal; hooks?: NodeIdentityHooks },
): Promise<NodeIdentity> {
  const log = getLogger(["vkubelet", "identity"]).with({ node: config.nodeName });
  const bootstrap = await loadKubeConfig({
    kubeconfig: config.bootstrapKubeconfig,
    clock: deps.clock,
  });
  const dirs = config.certDir ? [config.certDir] : defaultCertDirs(Deno.env.toObject());
  const store = fileCertificateStore({ dirs, nodeName: config.nodeName, kind: "client" });
  const current = new ClientCertificateSource(`the node's client certificate (${store.path})`);
  const connection: ConnectionConfig = {
    server: bootstrap.server,
    caCerts: bootstrap.caCerts,
    proxyUrl: bootstrap.proxyUrl,
    credentialSource: current,
    namespace: "default",
    source: `TLS bootstrap (${config.bootstrapKubeconfig})`,
  };
  const bootstrapClient = new KubeClient(bootstrap, { clock: deps.clock });
  const nodeClient = new KubeClient(connection, { clock: deps.clock });
  const stop = new AbortController();
  const signal = AbortSignal.any([deps.signal, stop.signal]);
  let first: (() => void) | undefined;
  const obtained = new Promise<void>((resolve) => first = resolve);
  let wroteKubeconfig = false;
  const done = csrCertificate({
    kind: "client",
    csrApi: identityCsrApi({ bootstrapClient, nodeClient, current, config, clock: deps.clock }),
    nodeName: config.nodeName,
    dnsNames: [],
    ipAddresses: [],
    clock: deps.clock,
    log,
    store,
    expirationSeconds: deps.hooks?.clientCertificateExpirationSeconds,
    renewFraction: deps.hooks?.clientCertificateRenewFraction,
  }).run((pair) => {
    current.set({ cert: pair.certPem, key: pair.keyPem });
    deps.hooks?.onClientCertificate?.(pair);
    log.info("talking to the apiserver as {subject} with the certificate in {path}", {
      subject: subjectOf(pair.certPem),
      path: store.path,
    });
    if (!wroteKubeconfig) {
      wroteKubeconfig = true;
      writeNodeKubeconfig(connection, store.path, config.nodeName).catch((err) =>
        log.warn("cannot write the node kubeconfig beside {path}: {err}", {
          path: store.path,
          err,
        })
      );
    }
    first?.();
    // Without rotation the first certificate is kept until it expires, as the kubelet does.
    if (!config.rotateCertificates) stop.abort();
  }, signal);
  const close = async () => {
    stop.abort();
    await done;
    bootstrapClient.close();
    nodeClient.close();
  };
  await Promise.race([obtained, done]);
  if (!current.current) {
    await close();
    signal.throwIfAborted();
    throw new Error("TLS bootstrap ended without a certificate");
  }
  return { connection, stop: close };
}

/**
 * The CSR calls: as the node while its certificate is valid (renewals are approved as
 * `selfnodeclient`), with the bootstrap credential otherwise (`nodeclient`), as client-go's
 * certificate manager falls back to the bootstrap certificate when the current one expired.
 * Failures are reworded to say what the operator can do.
 */
function identityCsrApi(parts: {
  bootstrapClient: KubeClient;
  nodeClient: KubeClient;
  current: ClientCertificateSource;
  config: Config;
  clock: Clock;
}): CsrApi {
  const asNode = () => {
    const cert = parts.current.current?.cert;
    return cert !== undefined && Date.parse(new X509Certificate(cert).validTo) > parts.clock.now();
  };
  const explain = (err: unknown, self: boolean): never => {
    throw new Error(csrFailureMessage(err, self, parts.config.bootstrapKubeconfig!), {
      cause: err,
    });
  };
  return {
    async create(csr, options) {
      const self = asNode();
      const client = self ? parts.nodeClient : parts.bootstrapClient;
      try {
        return await client.csrs.create(csr, options);
      } catch (err) {
        return explain(err, self);
      }
    },
    async waitForCertificate(name, options) {
      const self = asNode();
      const client = self ? parts.nodeClient : parts.bootstrapClient;
      try {
        return await client.csrs.waitForCertificate(name, options);
      } catch (err) {
        if (options.signal?.aborted) throw err;
        return explain(err, self);
      }
    },
  };
}

/** What went wrong with a node client CSR, and what to do about it. */
export function csrFailureMessage(err: unknown, asNode: boolean, bootstrapFile: string): string {
  const detail = err instanceof Error ? err.message : String(err);
  const reason = isKubeApiError(err) ? err.reason : undefined;
  if (reason === "Denied" || reason === "Failed" || reason === "Deleted") {
    return `${detail}; see kubectl describe csr for who did it, then let the node's next request ` +
      "through (the csrapproving controller, or kubectl certificate approve NAME)";
  }
  if (isUnauthorized(err)) {
    return asNode
      ? `the apiserver refused the node's client certificate (${detail}); it may have been ` +
        "revoked with the CA: delete NODE-client-current.pem from --cert-dir to bootstrap again"
      : `the bootstrap credential in ${bootstrapFile} was refused (${detail}): the bootstrap ` +
        "token expired, was deleted or is wrong; create a new one (kubeadm token create, or a " +
        "bootstrap-token-<id> Secret in kube-system) and put it in the bootstrap kubeconfig";
  }
  if (isForbidden(err)) {
    return `${detail}; the requester may not create CertificateSigningRequests: bind group ` +
      "system:bootstrappers (and system:nodes) to ClusterRole system:node-bootstrapper";
  }
  return detail;
}

/** A kubeconfig beside the certificate, naming it by path so rotations need no rewrite. */
async function writeNodeKubeconfig(
  connection: ConnectionConfig,
  certPath: string,
  nodeName: string,
): Promise<void> {
  const dir = certPath.slice(0, certPath.lastIndexOf("/"));
  const ca = connection.caCerts?.length
    ? `    certificate-authority-data: ${btoa(connection.caCerts.join("\n"))}\n`
    : "";
  const text = `apiVersion: v1
kind: Config
clusters:
- name: default-cluster
  cluster:
    server: ${connection.server}
${ca}users:
- name: default-auth
  user:
    client-certificate: ${certPath}
    client-key: ${certPath}
contexts:
- name: default-context
  context: {cluster: default-cluster, user: default-auth, namespace: default}
current-context: default-context
`;
  await writeAtomically(`${dir}/${nodeName}.kubeconfig`, text);
}

function subjectOf(certPem: string): string {
  return new X509Certificate(certPem).subject.replaceAll("\n", ", ");
}
