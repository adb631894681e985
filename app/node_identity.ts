/**
 * TLS bootstrap and client-certificate rotation, as the kubelet does them
 * (kubernetes/kubernetes pkg/kubelet/certificate/bootstrap/bootstrap.go `LoadClientConfig`,
 * cmd/kubelet/app/server.go `buildKubeletClientConfig`, pkg/kubelet/certificate/kubelet.go
 * `NewKubeletClientCertificateManager`): with `--bootstrap-kubeconfig`, a `--kubeconfig` that
 * exists and whose client certificate is still valid is used without bootstrapping (and the
 * bootstrap kubeconfig is not read: kubeadm deletes it after the join); otherwise a valid client
 * certificate for this node in `--cert-dir` is used as it is, and without one a CSR with signer
 * `kubernetes.io/kube-apiserver-client-kubelet` is filed with the bootstrap credential and
 * start-up waits for it. The certificate is kept in the cert dir (0600, atomically) and a
 * kubeconfig naming it is written to `--kubeconfig` (`./node_kubeconfig.ts`), or to
 * `NODE.kubeconfig` in the cert dir without one; vkubelet talks to the apiserver as
 * `system:node:<name>` from then on. With `--rotate-certificates` a new certificate is requested
 * at 70-90 % of the lifetime, now as the node itself, and the client presents it on its next
 * request without a restart.
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
  isKubeConfigError,
  isUnauthorized,
  KubeClient,
  KubeConfigError,
  loadKubeConfig,
} from "../k8s/mod.ts";
import {
  type CsrApi,
  csrCertificate,
  defaultCertDirs,
  fileCertificateStore,
  type KeyPair,
  storedPairProblem,
} from "../x509/mod.ts";
import {
  readNodeKubeconfig,
  storeOrKubeconfig,
  writeBootstrappedKubeconfig,
} from "./node_kubeconfig.ts";

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
  const start = await startingPoint(config, deps.clock, log);
  if ("asIs" in start) return { connection: start.asIs, stop: () => Promise.resolve() };
  const { cluster, fromKubeconfig, readBootstrap } = start;
  const dirs = config.certDir ? [config.certDir] : defaultCertDirs(Deno.env.toObject());
  const fileStore = fileCertificateStore({ dirs, nodeName: config.nodeName, kind: "client" });
  const store = fromKubeconfig
    ? storeOrKubeconfig(fileStore, fromKubeconfig, nodeNames(config), deps.clock)
    : fileStore;
  const current = new ClientCertificateSource(`the node's client certificate (${store.path})`);
  const connection: ConnectionConfig = {
    server: cluster.server,
    caCerts: cluster.caCerts,
    proxyUrl: cluster.proxyUrl,
    credentialSource: current,
    namespace: "default",
    source: fromKubeconfig
      ? `${cluster.source}, its certificate rotated in ${fileStore.path}`
      : `TLS bootstrap (${config.bootstrapKubeconfig})`,
  };
  // Only read when needed: kubeadm deletes the bootstrap kubeconfig once the node joined.
  let bootstrapClient = fromKubeconfig ? undefined : new KubeClient(cluster, { clock: deps.clock });
  const bootstrap = async () =>
    bootstrapClient ??= new KubeClient(await readBootstrap(), { clock: deps.clock });
  const nodeClient = new KubeClient(connection, { clock: deps.clock });
  const stop = new AbortController();
  const signal = AbortSignal.any([deps.signal, stop.signal]);
  let first: (() => void) | undefined;
  const obtained = new Promise<void>((resolve) => first = resolve);
  const done = csrCertificate({
    kind: "client",
    csrApi: identityCsrApi({ bootstrap, nodeClient, current, config, clock: deps.clock }),
    ...nodeNames(config),
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
    first?.();
    // Without rotation the first certificate is kept until it expires, as the kubelet does.
    if (!config.rotateCertificates) stop.abort();
  }, signal);
  const close = async () => {
    stop.abort();
    await done;
    bootstrapClient?.close();
    nodeClient.close();
  };
  await Promise.race([obtained, done]);
  try {
    if (!current.current) {
      signal.throwIfAborted();
      throw new Error("TLS bootstrap ended without a certificate");
    }
    if (!fromKubeconfig) await writeBootstrappedKubeconfig(config, connection, fileStore.path, log);
  } catch (err) {
    await close();
    throw err;
  }
  return { connection, stop: close };
}

/** The names a node client certificate carries: the node's, and no addresses. */
function nodeNames(config: Config) {
  return { nodeName: config.nodeName, dnsNames: [], ipAddresses: [] };
}

/**
 * Where the node's credential starts from, as the kubelet decides it (bootstrap.go
 * `LoadClientConfig`): a valid `--kubeconfig` as it is (`asIs`) when nothing rotates it, or as the
 * first certificate of the rotation (`fromKubeconfig`); otherwise the bootstrap kubeconfig, after
 * saying why `--kubeconfig` was no use.
 */
async function startingPoint(
  config: Config,
  clock: Clock,
  log: ReturnType<typeof getLogger>,
): Promise<
  { asIs: ConnectionConfig } | {
    cluster: ConnectionConfig;
    fromKubeconfig?: { path: string; pair: KeyPair };
    readBootstrap: () => Promise<ConnectionConfig>;
  }
> {
  const bootstrapPath = config.bootstrapKubeconfig;
  if (!bootstrapPath) throw new TypeError("startNodeIdentity needs --bootstrap-kubeconfig");
  const path = config.kubeconfig ?? "";
  const existing = path ? await readNodeKubeconfig(path, clock) : undefined;
  if (existing?.usable) {
    const readBootstrap = () => loadBootstrap(bootstrapPath, clock);
    log.info("using {path}, whose client certificate is valid until {until}; no bootstrap", {
      path,
      until: existing.validTo,
    });
    const notOwn = storedPairProblem(existing.pair, nodeNames(config), clock.now());
    if (config.rotateCertificates && !notOwn) {
      return {
        cluster: existing.connection,
        fromKubeconfig: { path, pair: existing.pair },
        readBootstrap,
      };
    }
    if (config.rotateCertificates) {
      log.warn("not rotating the client certificate of {path}: {problem}", {
        path,
        problem: notOwn,
      });
    }
    return { asIs: existing.connection };
  }
  if (existing) {
    log[existing.missing ? "info" : "warn"]("{path} {problem}; bootstrapping with {bootstrap}", {
      path,
      problem: existing.problem,
      bootstrap: bootstrapPath,
    });
  }
  const readBootstrap = () =>
    loadBootstrap(bootstrapPath, clock, existing && { path, problem: existing.problem });
  return { cluster: await readBootstrap(), readBootstrap };
}

/**
 * The bootstrap kubeconfig's connection; a file that cannot be used is an error that says,
 * when the node's own kubeconfig was no use either, why neither gives the node a credential.
 */
async function loadBootstrap(
  path: string,
  clock: Clock,
  node?: { path: string; problem: string },
): Promise<ConnectionConfig> {
  try {
    return await loadKubeConfig({ kubeconfig: path, env: {}, clock });
  } catch (err) {
    if (!isKubeConfigError(err)) throw err;
    const fix = "give --bootstrap-kubeconfig a kubeconfig with a valid bootstrap token (kubeadm " +
      "token create --print-join-command makes one)";
    const message = node
      ? `the node has no credential: --kubeconfig ${node.path} ${node.problem}, and the ` +
        `bootstrap kubeconfig cannot be used (${err.message}); ${fix}, or point --kubeconfig ` +
        "at a kubeconfig whose client certificate is valid"
      : `--bootstrap-kubeconfig: ${err.message}; ${fix}`;
    throw new KubeConfigError(message, { cause: err });
  }
}

/**
 * The CSR calls: as the node while its certificate is valid (renewals are approved as
 * `selfnodeclient`), with the bootstrap credential otherwise (`nodeclient`), as client-go's
 * certificate manager falls back to the bootstrap certificate when the current one expired.
 * Failures are reworded to say what the operator can do.
 */
function identityCsrApi(parts: {
  bootstrap: () => Promise<KubeClient>;
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
      try {
        const client = self ? parts.nodeClient : await parts.bootstrap();
        return await client.csrs.create(csr, options);
      } catch (err) {
        return explain(err, self);
      }
    },
    async waitForCertificate(name, options) {
      const self = asNode();
      try {
        const client = self ? parts.nodeClient : await parts.bootstrap();
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

function subjectOf(certPem: string): string {
  return new X509Certificate(certPem).subject.replaceAll("\n", ", ");
}
