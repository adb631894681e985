/**
 * The kubelet API: what the apiserver, kubectl and metrics-server call on a node's port 10250.
 *
 * - {@link createKubeletApp}: the Hono app — authentication (client certificate, bearer token
 *   via TokenReview, optional anonymous), authorization (SubjectAccessReview on
 *   `nodes/<node>`), `/containerLogs`, `/pods`, `/runningpods/`, `/healthz`, `/livez`,
 *   `/readyz`, `/stats/summary`, `/metrics/resource`, `/metrics`, and the `/exec`, `/attach`,
 *   `/portForward` routes that hand the connection to a {@link StreamingHandler}.
 * - {@link KubeletServer}: the TLS listener (`node:https`, HTTP/1.1 only) that runs the app for
 *   plain and upgrade requests, with a serving certificate from a `CertificateSource` of
 *   `x509/` (files, a CSR the cluster signs, or self-signed).
 * - {@link tokenReviewerFrom}, {@link accessReviewerFrom}, {@link csrApiFrom}: adapters from the
 *   `k8s/` client to the narrow interfaces used here; {@link boundedReviewers} runs the reviews
 *   in {@link ReviewSlots} (an in-flight cap, then 429).
 *
 * ```ts
 * const server = new KubeletServer({
 *   provider, nodeName, podCache: () => pods.list(), log, clock, metrics,
 *   auth: {
 *     clientCaPem,
 *     tokenReviewer: tokenReviewerFrom(kube),
 *     accessReviewer: accessReviewerFrom(kube),
 *   },
 *   port: 10250,
 *   certificates: fileCertificates({ certFile, keyFile, clock, log }),
 * });
 * const done = server.run(signal);
 * await server.ready;
 * ```
 * @module
 */
export { createKubeletApp, errorResponse } from "./app.ts";
export { type Authentication, Authenticator, bearerToken, certificateUser } from "./authn.ts";
export { type AuthorizationResult, Authorizer, requestAttributes } from "./authz.ts";
export { type ParsedLogOptions, parseLogOptions } from "./log_options.ts";
export {
  type AccessAttributes,
  type AccessDecision,
  type AccessReviewer,
  accessReviewerFrom,
  alwaysAllow,
  boundedReviewers,
  csrApiFrom,
  type ReviewLimits,
  ReviewSlots,
  type TokenReviewer,
  tokenReviewerFrom,
  type TokenReviewResult,
  type UserInfo,
} from "./reviews.ts";
export { KubeletServer, type KubeletServerDeps, type ServerAddress } from "./server.ts";
export { HttpError, isHttpError, statusBody, statusResponse } from "./status.ts";
export type {
  KubeletApiDeps,
  KubeletAuth,
  PodCache,
  StreamingContext,
  StreamingHandler,
  StreamingParams,
  StreamingResult,
  TunnelEndpoint,
} from "./types.ts";
export { handleUpgrade, requestFrom, writeResponse } from "./upgrade.ts";
