/**
 * Follows every pod of the bench namespace through one admin watch (resumed when the server
 * ends it) and records, per pod, when it was first seen Running and when it was gone, plus
 * status regressions and status writes inside a window the scenario opens.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { Kube } from "./kube.ts";

function healthy(pod: Pod): boolean {
  return pod.status?.phase === "Running" &&
    (pod.status.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
}

/** What the tracker knows about the bench's pods. */
export class PodTracker {
  /** performance.now() when each pod was first seen Running. */
  readonly runningAt = new Map<string, number>();
  /** performance.now() when each pod's DELETED event arrived. */
  readonly goneAt = new Map<string, number>();
  /** Pods that went from Running+Ready back to something else (without being deleted). */
  regressions = new Set<string>();
  /** Pods whose status changed while the window was open. */
  statusWrites = new Set<string>();
  #lastStatus = new Map<string, string>();
  #stop = new AbortController();
  #done: Promise<void>;
  #changed: (() => void)[] = [];

  constructor(readonly kube: Kube, readonly namespace: string) {
    this.#done = this.#run();
  }

  /** Clears the regression and status-write sets (a scenario's window starts). */
  openWindow(): void {
    this.regressions = new Set();
    this.statusWrites = new Set();
  }

  /** Resolves when `check()` holds, re-checked on every event and at least every 500 ms. */
  async until(check: () => boolean, signal: AbortSignal): Promise<boolean> {
    while (!check()) {
      if (signal.aborted) return false;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, 500);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.#changed.push(done);
      });
    }
    return true;
  }

  #notify(): void {
    const waiting = this.#changed;
    this.#changed = [];
    for (const wake of waiting) wake();
  }

  #observe(type: string, pod: Pod, now: number): void {
    const name = pod.metadata?.name ?? "";
    if (type === "DELETED") {
      if (!this.goneAt.has(name)) this.goneAt.set(name, now);
      return;
    }
    const status = JSON.stringify(pod.status ?? {});
    const before = this.#lastStatus.get(name);
    this.#lastStatus.set(name, status);
    if (before !== undefined && before !== status) this.statusWrites.add(name);
    if (healthy(pod)) {
      if (!this.runningAt.has(name)) this.runningAt.set(name, now);
    } else if (this.runningAt.has(name) && !pod.metadata?.deletionTimestamp) {
      this.regressions.add(name);
    }
  }

  async #run(): Promise<void> {
    let rv = "";
    while (!this.#stop.signal.aborted) {
      try {
        const query = rv ? `resourceVersion=${rv}` : "";
        for await (const event of this.kube.watchPods(this.namespace, query, this.#stop.signal)) {
          if (event.type === "ERROR") {
            rv = "";
            break;
          }
          rv = event.object.metadata?.resourceVersion ?? rv;
          if (event.type !== "BOOKMARK") this.#observe(event.type, event.object, performance.now());
          this.#notify();
        }
      } catch (err) {
        if (this.#stop.signal.aborted) return;
        console.error(`pod watch failed, resuming: ${err}`);
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  /** Ends the watch. */
  async close(): Promise<void> {
    this.#stop.abort();
    this.#notify();
    await this.#done;
  }
}
