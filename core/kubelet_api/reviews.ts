/**
 * The narrow parts of the Kubernetes API that the kubelet API needs — TokenReview,
 * SubjectAccessReview and CertificateSigningRequests — as small interfaces, with adapters from
 * the `k8s/` client. Unit tests implement these interfaces directly.
 * @module
 */
import type { TokenReview } from "kubernetes-types/authentication/v1.d.ts";
import type { SubjectAccessReview } from "kubernetes-types/authorization/v1.d.ts";
import type { KubeApis } from "../../k8s/mod.ts";
import type { CsrApi } from "../../x509/mod.ts";

/** Options for a review call. */
export interface ReviewOptions {
  signal?: AbortSignal;
}

/** Who made a request. */
export interface UserInfo {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

/** The result of checking a bearer token. */
export type TokenReviewResult =
  | { authenticated: true; user: UserInfo }
  | { authenticated: false; error?: string };

/** Checks bearer tokens (TokenReview). */
export interface TokenReviewer {
  review(token: string, options: ReviewOptions): Promise<TokenReviewResult>;
}

/** What a request wants to do, as a SubjectAccessReview's `resourceAttributes`. */
export interface AccessAttributes {
  verb: string;
  /** Always `nodes` for the kubelet API. */
  resource: string;
  subresource: string;
  /** The node's name. */
  name: string;
}

/** The answer to one access check. */
export interface AccessDecision {
  allowed: boolean;
  /** The authorizer's reason, for logs and the 403 message. */
  reason?: string;
}

/** Checks whether a user may do something (SubjectAccessReview). */
export interface AccessReviewer {
  review(
    user: UserInfo,
    attributes: AccessAttributes,
    options: ReviewOptions,
  ): Promise<AccessDecision>;
}

/** An {@link AccessReviewer} that allows everything (`--authorization-mode=AlwaysAllow`). */
export const alwaysAllow: AccessReviewer = {
  review: () => Promise.resolve({ allowed: true, reason: "AlwaysAllow" }),
};

/** A {@link TokenReviewer} on the `k8s/` client. */
export function tokenReviewerFrom(kube: Pick<KubeApis, "tokenReviews">): TokenReviewer {
  return {
    async review(token, options) {
      const answer: TokenReview = await kube.tokenReviews.create({ spec: { token } }, options);
      const status = answer.status;
      if (!status?.authenticated || !status.user?.username) {
        return { authenticated: false, error: status?.error };
      }
      return {
        authenticated: true,
        user: {
          username: status.user.username,
          uid: status.user.uid,
          groups: status.user.groups ?? [],
          extra: status.user.extra,
        },
      };
    },
  };
}

/** An {@link AccessReviewer} on the `k8s/` client. */
export function accessReviewerFrom(
  kube: Pick<KubeApis, "subjectAccessReviews">,
): AccessReviewer {
  return {
    async review(user, attributes, options) {
      const review: SubjectAccessReview = {
        spec: {
          user: user.username,
          uid: user.uid,
          groups: user.groups,
          extra: user.extra,
          resourceAttributes: {
            verb: attributes.verb,
            group: "",
            version: "v1",
            resource: attributes.resource,
            subresource: attributes.subresource,
            name: attributes.name,
          },
        },
      };
      const answer = await kube.subjectAccessReviews.create(review, options);
      return {
        allowed: answer.status?.allowed === true && answer.status.denied !== true,
        reason: answer.status?.reason || answer.status?.evaluationError,
      };
    },
  };
}

/** A {@link CsrApi} on the `k8s/` client. */
export function csrApiFrom(kube: Pick<KubeApis, "csrs">): CsrApi {
  return {
    create: (csr, options) => kube.csrs.create(csr, options),
    waitForCertificate: (name, options) => kube.csrs.waitForCertificate(name, options),
  };
}
