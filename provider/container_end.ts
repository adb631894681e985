/**
 * How a container ended when no exit of its own says so: its pod was deleted or terminated
 * before the backend reported an end, the backend lost it, or the process left no exit status.
 * One rule for every provider and the core, the kubelet's: `ContainerStatusUnknown` with exit
 * code 137 (pkg/kubelet/kubelet_pods.go `convertToAPIContainerStatuses`, which reports a
 * container it can no longer find this way, "The container could not be located when the pod
 * was deleted.  The container used to be Running" or "… when the pod was terminated").
 * @module
 */
import type { TerminatedReport } from "./pod_status.ts";

/** Why vkubelet, not the container's own exit, ends a container. */
export type UnknownEndCause =
  /** The pod was deleted while the container ran (or before its end was read). */
  | "deleted"
  /** The pod was terminated (failed, evicted, its run discarded) before its end was read. */
  | "terminated"
  /** The backend no longer has the container's run (a lost job, task or group). */
  | "lost"
  /** The container's process ended without leaving an exit status. */
  | "no-exit-status";

const MESSAGES: Record<UnknownEndCause, string> = {
  // The kubelet's own words (two spaces included) for the first two.
  deleted: "The container could not be located when the pod was deleted.  " +
    "The container used to be Running",
  terminated: "The container could not be located when the pod was terminated",
  lost: "The container could not be located: the backend no longer reports its run",
  "no-exit-status": "The container ended without leaving an exit status",
};

/** Options for {@link unknownEnd}. */
export interface UnknownEndOptions {
  /** When it was found ended (clock ms). */
  nowMs: number;
  /** When the container started (clock ms), if known. */
  startedAtMs?: number;
  /** What the backend said, appended to the message. */
  detail?: string;
}

/**
 * The terminated state of a container that ended for `cause`: `ContainerStatusUnknown`, exit
 * code 137, the kubelet's message (with the backend's `detail` after it).
 *
 * @example A job the backend no longer reports
 * ```ts
 * import { unknownEnd } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * const end = unknownEnd("lost", { nowMs: 5_000, detail: "job 42 is gone" });
 * assert.equal(end.reason, "ContainerStatusUnknown");
 * assert.equal(end.exitCode, 137);
 * assert.match(end.message!, /job 42 is gone$/);
 * ```
 */
export function unknownEnd(cause: UnknownEndCause, options: UnknownEndOptions): TerminatedReport {
  const message = options.detail ? `${MESSAGES[cause]}: ${options.detail}` : MESSAGES[cause];
  return {
    exitCode: 137,
    reason: "ContainerStatusUnknown",
    message,
    finishedAtMs: options.nowMs,
    ...(options.startedAtMs !== undefined ? { startedAtMs: options.startedAtMs } : {}),
  };
}
