/**
 * The kubelet's container restart back-off (k8s.io/client-go util/flowcontrol/backoff.go as
 * used by kubernetes/kubernetes pkg/kubelet/kuberuntime/kuberuntime_manager.go `doBackOff`):
 * the first restart is immediate, then 10 s doubling to 5 min, measured from when the last
 * instance finished; an entry not updated for twice the maximum starts again at 10 s.
 * @module
 */
import type { ContainerRecord } from "./state.ts";

/** Initial and maximum back-off. */
export const BACKOFF_INITIAL_MS = 10_000;
export const BACKOFF_MAX_MS = 300_000;

/** When the container may restart after finishing at `finishedAtMs`; `undefined` means now. */
export function backoffUntil(
  record: ContainerRecord,
  finishedAtMs: number,
  nowMs: number,
): number | undefined {
  const entry = record.backoff;
  if (!entry) return undefined;
  if (finishedAtMs - entry.lastUpdateMs > 2 * BACKOFF_MAX_MS) return undefined;
  return nowMs - finishedAtMs < entry.delayMs ? finishedAtMs + entry.delayMs : undefined;
}

/** Records a restart at `nowMs` (flowcontrol `Next`). */
export function recordRestart(record: ContainerRecord, finishedAtMs: number, nowMs: number): void {
  const entry = record.backoff;
  const expired = !entry || finishedAtMs - entry.lastUpdateMs > 2 * BACKOFF_MAX_MS;
  const delayMs = expired ? BACKOFF_INITIAL_MS : Math.min(entry.delayMs * 2, BACKOFF_MAX_MS);
  record.backoff = { delayMs, lastUpdateMs: nowMs };
}
