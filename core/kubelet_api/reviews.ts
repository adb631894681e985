/**
 * The narrow parts of the Kubernetes API that the kubelet API needs — TokenReview,
 * SubjectAccessReview and CertificateSigningRequests — as small interfaces, with adapters from
 * the `k8s/` client. Unit tests implement these interfaces directly.
 * @module
 */
import type { TokenReview } from "kubernetes-types/authentication/v1.d.ts";
import type { SubjectAccessReview } from "kubernetes-types/authorization/v1.d.ts";
import type { KubeApis } from "../../k8s/mod.ts";
import { HttpError } from "./status.ts";
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

/** How many reviews {@link ReviewSlots} lets run and wait. */
export interface ReviewLimits {
  /** Reviews sent to the apiserver at once; default 8. */
  inFlight?: number;
  /** Reviews waiting for a turn; one more is answered 429 at once. Default 128. */
  waiting?: number;
}

/**
 * One bound for a node's TokenReviews and SubjectAccessReviews together. A flood of requests
 * with made-up bearer tokens would otherwise send one TokenReview each, all at once: the
 * apiserver counts TokenReview and SubjectAccessReview creations against its mutating in-flight
 * limit, which the node's Lease renewals share, and each waiting request holds its memory here.
 * Beyond the bound the request is answered 429 with `Retry-After: 1`, as the apiserver's own
 * in-flight limit answers (kubernetes/apiserver pkg/server/filters/maxinflight.go).
 */
export class ReviewSlots {
  readonly #inFlight: number;
  readonly #maxWaiting: number;
  #running = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(limits: ReviewLimits = {}) {
    this.#inFlight = limits.inFlight ?? 8;
    this.#maxWaiting = limits.waiting ?? 128;
    if (!(this.#inFlight >= 1)) throw new RangeError("review inFlight must be at least 1");
  }

  /** Runs `call` in a slot; rejects with a 429 {@link HttpError} when too many wait. */
  async run<T>(call: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    signal?.throwIfAborted();
    if (this.#running >= this.#inFlight) await this.#wait(signal);
    else this.#running++;
    try {
      return await call();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running--;
    }
  }

  #wait(signal: AbortSignal | undefined): Promise<void> {
    if (this.#waiting.length >= this.#maxWaiting) {
      return Promise.reject(
        new HttpError(
          429,
          "too many authentication and authorization checks in progress; retry later",
          { headers: { "retry-after": "1" } },
        ),
      );
    }
    return new Promise<void>((resolve, reject) => {
      const turn = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      const onAbort = () => {
        const at = this.#waiting.indexOf(turn);
        if (at >= 0) this.#waiting.splice(at, 1);
        reject(signal!.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(turn);
    });
  }
}

/** `tokens` and `access` with every review run in `slots`. */
export function boundedReviewers(
  slots: ReviewSlots,
  tokens: TokenReviewer,
  access: AccessReviewer,
): { tokenReviewer: TokenReviewer; accessReviewer: AccessReviewer } {
  return {
    tokenReviewer: {
      review: (token, options) => slots.run(() => tokens.review(token, options), options.signal),
    },
    accessReviewer: {
      review: (user, attributes, options) =>
        slots.run(() => access.review(user, attributes, options), options.signal),
    },
  };
}
