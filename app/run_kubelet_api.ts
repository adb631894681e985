/**
 * Builds the kubelet API server from the config: the serving certificate (files, a
 * kubelet-serving CSR, or self-signed on request), authentication against the client CA and
 * TokenReview, authorization by SubjectAccessReview, and the exec/attach/port-forward handler.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { KubeClient } from "../k8s/mod.ts";
import type { Clock } from "../base/clock.ts";
import type { Config } from "./config/config.ts";
import {
  accessReviewerFrom,
  alwaysAllow,
  csrApiFrom,
  KubeletServer,
  tokenReviewerFrom,
} from "../core/kubelet_api/mod.ts";
import {
  type CertificateSource,
  csrCertificate,
  fileCertificates,
  selfSignedCertificate,
} from "../x509/mod.ts";
import { createStreamingHandler } from "../core/kubelet_api/streaming/handler.ts";
import { defaultCertDirs, fileCertificateStore } from "../x509/certificate_store.ts";
import { getLogger } from "../base/log.ts";
import type { VkubeletMetrics } from "../core/metrics.ts";
import type { Provider } from "../provider/mod.ts";

/** What {@link createKubeletApiServer} needs besides the config. */
export interface KubeletApiServerDeps {
  kube: KubeClient;
  provider: Provider;
  clock: Clock;
  metrics: VkubeletMetrics;
  internalIp: string;
  /** The port to listen on (already resolved when the config says 0). */
  port: number;
  /** This node's pods as the API has them. */
  podCache: () => Pod[];
  /** A serving certificate source started at process start-up ({@link servingCsrSource}). */
  certificates?: CertificateSource;
}

/**
 * The kubelet-serving CSR source (`--rotate-server-certificates`), kept in `--cert-dir`. Its
 * client must not be fenced by leader election: a standby asks for its own certificate.
 */
export function servingCsrSource(
  config: Config,
  deps: { kube: KubeClient; clock: Clock; internalIp: string },
): CertificateSource {
  const log = getLogger(["vkubelet", "kubelet-api"]).with({ node: config.nodeName });
  return csrCertificate({
    nodeName: config.nodeName,
    dnsNames: [config.nodeName],
    ipAddresses: [deps.internalIp],
    clock: deps.clock,
    log,
    csrApi: csrApiFrom(deps.kube),
    store: fileCertificateStore({
      dirs: config.certDir ? [config.certDir] : defaultCertDirs(Deno.env.toObject()),
      nodeName: config.nodeName,
    }),
  });
}

/** Returns the configured {@link KubeletServer}; run it with `run(signal)`. */
export async function createKubeletApiServer(
  config: Config,
  deps: KubeletApiServerDeps,
): Promise<KubeletServer> {
  const { kube, clock } = deps;
  const log = getLogger(["vkubelet", "kubelet-api"]).with({ node: config.nodeName });
  const clientCaPem = config.clientCaFile
    ? await Deno.readTextFile(config.clientCaFile)
    : kube.config.caCerts?.join("\n");
  if (!clientCaPem) {
    log.warn(
      "no client CA: neither --client-ca-file nor the kubeconfig names one, so client " +
        "certificates (the apiserver's too) are refused; set --client-ca-file",
    );
  }
  const names = {
    nodeName: config.nodeName,
    dnsNames: [config.nodeName],
    ipAddresses: [deps.internalIp],
    clock,
    log,
  };
  const certificates = deps.certificates ?? (config.tlsCertFile
    ? fileCertificates({
      certFile: config.tlsCertFile,
      keyFile: config.tlsPrivateKeyFile!,
      clock,
      log,
    })
    : config.tlsSelfSigned
    ? selfSignedCertificate(names)
    : servingCsrSource(config, { kube, clock, internalIp: deps.internalIp }));
  return new KubeletServer({
    provider: deps.provider,
    nodeName: config.nodeName,
    log,
    clock,
    metrics: deps.metrics,
    podCache: deps.podCache,
    auth: {
      clientCaPem,
      tokenReviewer: tokenReviewerFrom(kube),
      anonymous: config.anonymousAuth,
      accessReviewer: config.authorizationMode === "AlwaysAllow"
        ? alwaysAllow
        : accessReviewerFrom(kube),
    },
    hostname: config.listenAddress,
    port: deps.port,
    certificates,
    streaming: createStreamingHandler({
      log: getLogger(["vkubelet", "streaming"]).with({ node: config.nodeName }),
      clock,
      streamIdleTimeoutMs: config.streamIdleTimeout,
      streamCreationTimeoutMs: config.streamCreationTimeout,
    }),
  });
}
