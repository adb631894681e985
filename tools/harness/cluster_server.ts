/**
 * A kubelet API server on 127.0.0.1 for tests against the real control plane: serving
 * certificate from the cluster CA, client CA = the cluster CA, TokenReview and
 * SubjectAccessReview through the admin client, the mock provider on the real clock.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../base/clock.ts";
import {
  accessReviewerFrom,
  KubeletServer,
  type KubeletServerDeps,
  tokenReviewerFrom,
} from "../../core/kubelet_api/mod.ts";
import { type CertificateSource, fileCertificates } from "../../x509/mod.ts";
import { VkubeletMetrics } from "../../core/metrics.ts";
import type { Provider } from "../../provider/mod.ts";
import { KubeClient } from "../../k8s/mod.ts";
import { createProvider, type MockProvider } from "../../providers/mock/mod.ts";
import type { TestCluster } from "../cluster/harness.ts";
import { log } from "./kubelet_api_fakes.ts";

/** A running server and what a test needs around it. */
export interface ClusterServer extends AsyncDisposable {
  server: KubeletServer;
  port: number;
  url: string;
  kube: KubeClient;
  mock: MockProvider;
  /** Pods the pod cache returns; tests push to it. */
  pods: Pod[];
  caPem: string;
}

/** Options for {@link startClusterServer}. */
export interface ClusterServerOptions {
  nodeName: string;
  certificates?: CertificateSource;
  auth?: Partial<KubeletServerDeps["auth"]>;
  mockConfig?: Record<string, unknown>;
  port?: number;
  /** Serve this provider instead of the mock (the mock still exists for `bindPod`). */
  provider?: Provider;
}

/** Starts a server; dispose it to stop it and wait for it. */
export async function startClusterServer(
  cluster: TestCluster,
  options: ClusterServerOptions,
): Promise<ClusterServer> {
  const kube = await KubeClient.fromConfig({ kubeconfig: cluster.kubeconfigPath });
  const shutdown = new AbortController();
  const mock = createProvider(options.mockConfig ?? { followInterval: "200ms" }, {
    nodeName: options.nodeName,
    log,
    clock: realClock,
    internalIp: "127.0.0.1",
    daemonPort: 0,
    signal: shutdown.signal,
  }) as MockProvider;
  const caPem = await Deno.readTextFile(`${cluster.pkiDir}/ca.crt`);
  const serving = options.certificates ??
    await (async () => {
      const files = await cluster.issueServingCert(options.nodeName, ["127.0.0.1", "localhost"]);
      return fileCertificates({ ...files, clock: realClock, log, pollIntervalMs: 200 });
    })();
  const pods: Pod[] = [];
  const server = new KubeletServer({
    provider: options.provider ?? mock,
    nodeName: options.nodeName,
    podCache: () => pods,
    log,
    clock: realClock,
    metrics: new VkubeletMetrics(),
    auth: {
      clientCaPem: caPem,
      tokenReviewer: tokenReviewerFrom(kube),
      accessReviewer: accessReviewerFrom(kube),
      ...options.auth,
    },
    hostname: "127.0.0.1",
    port: options.port ?? 0,
    certificates: serving,
    shutdownGraceMs: 1_000,
  });
  const running = server.run(shutdown.signal);
  await withDeadline(Promise.race([server.ready, running]), 30_000, "server start");
  const port = server.address!.port;
  return {
    server,
    port,
    url: `https://127.0.0.1:${port}`,
    kube,
    mock,
    pods,
    caPem,
    async [Symbol.asyncDispose]() {
      shutdown.abort();
      await running;
      await mock.close();
      kube.close();
    },
  };
}

/** `promise`, or a rejection naming `what` after `ms`; the timer is cleared either way. */
export async function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took more than ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** GETs `path` with an optional client certificate and token; returns status and body. */
export async function call(
  server: ClusterServer,
  path: string,
  options: { cert?: { certFile: string; keyFile: string }; token?: string } = {},
): Promise<{ status: number; body: string }> {
  const tls: Deno.CreateHttpClientOptions & Partial<Deno.TlsCertifiedKeyPem> = {
    caCerts: [server.caPem],
  };
  if (options.cert) {
    tls.cert = await Deno.readTextFile(options.cert.certFile);
    tls.key = await Deno.readTextFile(options.cert.keyFile);
  }
  using client = Deno.createHttpClient(tls);
  const res = await fetch(server.url + path, {
    client,
    headers: options.token ? { authorization: `Bearer ${options.token}` } : {},
    signal: AbortSignal.timeout(20_000),
  });
  return { status: res.status, body: await res.text() };
}
