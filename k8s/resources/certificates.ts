/**
 * CertificateSigningRequests: create, watch, approve, and wait for the signed certificate, as a
 * kubelet does when it bootstraps or rotates its serving certificate.
 * @module
 */
import type {
  CertificateSigningRequest,
  CertificateSigningRequestList,
} from "kubernetes-types/certificates/v1.d.ts";
import { KubeApiError } from "../errors.ts";
import { ClusterApi, type SignalOptions } from "./scoped.ts";
import type { WriteOptions } from "./resource.ts";

/** `certificates.k8s.io/v1` CertificateSigningRequests. */
export class CertificateSigningRequestsApi
  extends ClusterApi<CertificateSigningRequest, CertificateSigningRequestList> {
  /** Replaces `status.conditions` through the `approval` subresource (approve or deny). */
  updateApproval(
    csr: CertificateSigningRequest,
    options: WriteOptions = {},
  ): Promise<CertificateSigningRequest> {
    return this.putIn(csr, "approval", options);
  }

  /**
   * Waits until the CSR named `name` carries a certificate and returns it (PEM). Throws a
   * `KubeApiError` with reason `Denied` or `Failed` if it is refused.
   */
  async waitForCertificate(name: string, options: SignalOptions = {}): Promise<string> {
    const events = this.watch({ fieldSelector: `metadata.name=${name}`, signal: options.signal });
    for await (const { type, object } of events) {
      if (type === "BOOKMARK") continue;
      if (type === "DELETED") throw refused(name, "Deleted", "was deleted before it was signed");
      const refusal = object.status?.conditions?.find((c) =>
        (c.type === "Denied" || c.type === "Failed") && c.status !== "False"
      );
      if (refusal) {
        throw refused(name, refusal.type, refusal.message ?? `was ${refusal.type.toLowerCase()}`);
      }
      if (object.status?.certificate) return atobText(object.status.certificate);
    }
    options.signal?.throwIfAborted();
    throw new Error(`watch on CertificateSigningRequest ${name} ended`);
  }
}

function refused(name: string, reason: string, message: string): KubeApiError {
  return new KubeApiError(403, {
    method: "WATCH",
    path: `/apis/certificates.k8s.io/v1/certificatesigningrequests/${name}`,
    status: { reason, message: `CertificateSigningRequest ${name} ${message}` },
  });
}

function atobText(base64: string): string {
  return new TextDecoder().decode(Uint8Array.from(atob(base64), (c) => c.charCodeAt(0)));
}
