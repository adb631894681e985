/**
 * The kubelet API's parts from the config: the serving certificate (files, a kubelet-serving CSR
 * per node, or self-signed on request), authentication against the client CA and TokenReview,
 * and authorization by SubjectAccessReview. `./serve.ts` builds the servers from them.
 * @module
 */
import type { KubeClient } from "../../k8s/mod.ts";
import type { Clock } from "../../base/clock.ts";
import type { Config } from "../config/config.ts";
import {
  accessReviewerFrom,
  alwaysAllow,
  boundedReviewers,
  csrApiFrom,
  ReviewSlots,
  tokenReviewerFrom,
} from "../../core/kubelet_api/mod.ts";
import {
  type CertificateSource,
  csrCertificate,
  fileCertificates,
  selfSignedCertificate,
} from "../../x509/mod.ts";
import { defaultCertDirs, fileCertificateStore } from "../../x509/certificate_store.ts";
import { getLogger } from "../../base/log.ts";
import type { NodeEntry } from "../node_set.ts";

/**
 * A node's kubelet-serving CSR source (`--rotate-server-certificates`), for its name and
 * address, kept in `--cert-dir`. Its client must not be fenced by leader election: a standby
 * asks for its own certificate.
 */
export function servingCsrSource(
  config: Pick<Config, "certDir">,
  entry: Pick<NodeEntry, "name" | "nodeIp">,
  deps: { kube: KubeClient; clock: Clock },
): CertificateSource {
  const log = getLogger(["vkubelet", "kubelet-api"]).with({ node: entry.name });
  return csrCertificate({
    nodeName: entry.name,
    dnsNames: [entry.name],
    ipAddresses: [entry.nodeIp],
    clock: deps.clock,
    log,
    csrApi: csrApiFrom(deps.kube),
    store: fileCertificateStore({
      dirs: config.certDir ? [config.certDir] : defaultCertDirs(Deno.env.toObject()),
      nodeName: entry.name,
    }),
  });
}

/**
 * One serving certificate for every node: `--tls-cert-file` (which must name every node's
 * address), or self-signed for every node's name and address.
 */
export function sharedServingCertificate(
  config: Pick<Config, "tlsCertFile" | "tlsPrivateKeyFile">,
  entries: Pick<NodeEntry, "name" | "nodeIp">[],
  clock: Clock,
): CertificateSource {
  const log = getLogger(["vkubelet", "kubelet-api"]).with(
    entries.length === 1 ? { node: entries[0].name } : {},
  );
  if (config.tlsCertFile) {
    return fileCertificates({
      certFile: config.tlsCertFile,
      keyFile: config.tlsPrivateKeyFile!,
      clock,
      log,
    });
  }
  return selfSignedCertificate({
    nodeName: entries[0].name,
    dnsNames: entries.map((e) => e.name),
    ipAddresses: entries.map((e) => e.nodeIp),
    clock,
    log,
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
