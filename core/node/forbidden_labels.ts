/**
 * Reads the labels the NodeRestriction admission plugin refused out of its 403 answer, so that
 * the node controller can register (or patch) without exactly those labels instead of failing.
 *
 * A node identity (`system:node:<name>`) may not set `kubernetes.io/` or `k8s.io/` labels
 * outside the kubelet's own set (such as `kubernetes.io/role`) nor any
 * `node-restriction.kubernetes.io/` label. The plugin answers, on create,
 * `node "N" is not allowed to set the following labels: a, b` and, on update,
 * `is not allowed to modify labels: a, b` (kubernetes/kubernetes
 * plugin/pkg/admission/noderestriction/admission.go `admitNode`, `getForbiddenLabels`).
 * @module
 */
import { isForbidden, KubeApiError } from "../../k8s/errors.ts";

const PATTERN = /not allowed to (?:set the following|modify) labels: ([^\n]+)$/;

/** The label keys a 403 names as forbidden; empty for any other error. */
export function forbiddenLabels(err: unknown): string[] {
  if (!isForbidden(err) || !(err instanceof KubeApiError)) return [];
  const message = err.status?.message ?? err.message;
  const match = PATTERN.exec(message.trim());
  if (!match) return [];
  return match[1].split(",").map((label) => label.trim()).filter((label) => label !== "");
}
