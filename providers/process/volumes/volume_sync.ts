/**
 * When a pod's volumes are (re)written: first before any container starts, retried with a
 * doubling delay (1 s to 30 s) while a source is missing, then every `volumeSyncInterval` so
 * that ConfigMap and Secret updates propagate, as the kubelet's volume manager resyncs
 * (kubernetes/kubernetes pkg/kubelet/volumemanager). A failed refresh keeps what was written.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { VolumeSet } from "./volumes.ts";

/** What a sync pass found. */
export type VolumeSyncResult =
  /** The volumes are written; `first` on the first success. */
  | { ok: true; first: boolean; wakeAt: number }
  /** A refresh of ready volumes failed; the old content stays. */
  | { ok: false; ready: true; message: string; wakeAt: number }
  /** The volumes were never written; `changed` when the message differs from the last one. */
  | { ok: false; ready: false; message: string; changed: boolean; wakeAt: number };

/** The sync schedule of one pod's volumes; see the module doc. */
export class VolumeSync {
  readonly #volumes: VolumeSet;
  readonly #intervalMs: number;
  #ready = false;
  #error?: string;
  #next = 0;
  #retryMs = 1000;

  constructor(volumes: VolumeSet, options: { intervalMs: number }) {
    this.#volumes = volumes;
    this.#intervalMs = options.intervalMs;
  }

  /** True once the volumes were written at least once. */
  get ready(): boolean {
    return this.#ready;
  }

  /** When the next periodic refresh is due. */
  get nextAt(): number {
    return this.#next;
  }

  /** True if a pass should run at `nowMs`: periodic, or a token's refresh (or retry) is due. */
  due(nowMs: number): boolean {
    return !this.#ready || nowMs >= this.#next ||
      nowMs >= (this.#volumes.nextTokenRefresh() ?? Infinity);
  }

  /** Makes the next pass due at once (the pod spec changed). */
  expire(): void {
    this.#next = 0;
  }

  /** Writes every volume once; never throws. */
  async run(pod: Pod, nowMs: number, signal: AbortSignal): Promise<VolumeSyncResult> {
    try {
      await this.#volumes.sync(pod, signal);
      const first = !this.#ready;
      this.#ready = true;
      this.#error = undefined;
      this.#retryMs = 1000;
      this.#next = nowMs + this.#intervalMs;
      return { ok: true, first, wakeAt: this.#next };
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      const retryAt = nowMs + this.#retryMs;
      this.#retryMs = Math.min(this.#retryMs * 2, 30_000);
      if (this.#ready) {
        // Keep what was written and retry soon, but never sooner than the back-off: the old
        // `next` is in the past, and waking for it again at once would spin.
        this.#next = Math.min(retryAt, nowMs + this.#intervalMs);
        return { ok: false, ready: true, message, wakeAt: this.#next };
      }
      const changed = message !== this.#error;
      this.#error = message;
      return { ok: false, ready: false, message, changed, wakeAt: retryAt };
    }
  }
}
