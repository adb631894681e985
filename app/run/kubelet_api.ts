/**
 * Builds the kubelet API server from the config: the serving certificate (files, a
 * kubelet-serving CSR, or self-signed on request), authentication against the client CA and
 * TokenReview, authorization by SubjectAccessReview, and the exec/attach/port-forward handler.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { KubeClient } from "../../k8s/mod.ts";
import type { Clock } from "../../base/clock.ts";
import type { Config } from "../config/config.ts";
import {
  accessReviewerFrom,
  alwaysAllow,
  boundedReviewers,
  csrApiFrom,
  KubeletServer,
  ReviewSlots,
  tokenReviewerFrom,
} from "../../core/kubelet_api/mod.ts";
import {
  type CertificateSource,
  csrCertificate,
  fileCertificates,
  selfSignedCertificate,
} from "../../x509/mod.ts";
import { createStreamingHandler } from "../../core/kubelet_api/streaming/handler.ts";
import { defaultCertDirs, fileCertificateStore } from "../../x509/certificate_store.ts";
import { getLogger } from "../../base/log.ts";
import type { VkubeletMetrics } from "../../core/metrics.ts";
import type { Tracer } from "../../core/tracing.ts";
import type { Provider } from "../../provider/mod.ts";

/** What {@link createKubeletApiServer} needs besides the config. */
export interface KubeletApiServerDeps {
  kube: KubeClient;
  /** TokenReviews and SubjectAccessReviews go through it (its own limiter). */
  reviews: KubeClient;
  provider: Provider;
  clock: Clock;
  metrics: VkubeletMetrics;
  /** Spans for the API's requests; none when tracing is off. */
  tracer?: Tracer;
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
  const clientCaPem = await clientCa(config, kube, log);
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
    tracer: deps.tracer,
    podCache: deps.podCache,
    auth: { clientCaPem, anonymous: config.anonymousAuth, ...reviewersFor(config, deps.reviews) },
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

/**
 * The client CA: `--client-ca-file`, else the kubeconfig's cluster CA, with a warning either
 * way it is not the file: trusting the server's CA for client certificates is what the
 * kubelet's `--client-ca-file` exists to avoid saying implicitly.
 */
export async function clientCa(
  config: Pick<Config, "clientCaFile">,
  kube: Pick<KubeClient, "config">,
  log: Pick<ReturnType<typeof getLogger>, "warn">,
): Promise<string | undefined> {
  if (config.clientCaFile) return await Deno.readTextFile(config.clientCaFile);
  const fromKubeconfig = kube.config.caCerts?.join("\n");
  if (fromKubeconfig) {
    log.warn(
      "no --client-ca-file: client certificates are verified against the CA that signed the " +
        "apiserver's serving certificate (from {source}), so any client certificate that CA " +
        "issued is trusted; set --client-ca-file to the CA of the apiserver's kubelet client " +
        "certificate",
      { source: kube.config.source },
    );
  } else {
    log.warn(
      "no client CA: neither --client-ca-file nor the kubeconfig names one, so client " +
        "certificates (the apiserver's too) are refused; set --client-ca-file",
    );
  }
  return fromKubeconfig;
}

/** How many reviews run at once and wait, per process. */
const REVIEW_LIMITS = { inFlight: 8, waiting: 128 };

/**
 * The TokenReview and SubjectAccessReview checks on the reviews client, bounded by one
 * {@link ReviewSlots} (`AlwaysAllow` makes no SubjectAccessReview).
 */
export function reviewersFor(
  config: Pick<Config, "authorizationMode">,
  reviews: KubeClient,
  slots: ReviewSlots = new ReviewSlots(REVIEW_LIMITS),
) {
  const bounded = boundedReviewers(slots, tokenReviewerFrom(reviews), accessReviewerFrom(reviews));
  return {
    tokenReviewer: bounded.tokenReviewer,
    accessReviewer: config.authorizationMode === "AlwaysAllow"
      ? alwaysAllow
      : bounded.accessReviewer,
  };
}
