/**
 * Pods that B's scheduler cannot place: a downstream pod whose `PodScheduled` condition has said
 * `False`/`Unschedulable` for longer than `unschedulableTimeout` is handed to `fail`, which fails
 * the upstream pod with B's reason so that A's controllers replace it, as tensile-kube's
 * descheduler does (virtual-kubelet/tensile-kube pkg/descheduler) instead of leaving it Pending.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { Clock } from "../../../provider/mod.ts";

/** What {@link UnschedulableWatch} needs. */
export interface UnschedulableWatchDeps {
  timeoutMs: number;
  clock: Clock;
  /** Called once per downstream pod (by uid) that stayed unschedulable past the timeout. */
  fail: (downstream: Pod, message: string) => void;
  /**
   * False while this replica stands by (`--leader-elect`): pods are not failed then; they are
   * still watched, and the leader (this replica again, or another) fails them.
   */
  active?: () => boolean;
}

/** The `PodScheduled=False, reason Unschedulable` condition of `pod`, if it has one. */
export function unschedulableCondition(pod: Pod) {
  if (pod.spec?.nodeName || pod.status?.phase !== "Pending") return undefined;
  return pod.status?.conditions?.find((c) =>
    c.type === "PodScheduled" && c.status === "False" && c.reason === "Unschedulable"
  );
}

/** Tracks unschedulable downstream pods and fails those past the timeout. */
export class UnschedulableWatch {
  readonly #deps: UnschedulableWatchDeps;
  /** Downstream pods now unschedulable, by uid: since when (ms) and the latest pod. */
  readonly #pending = new Map<string, { sinceMs: number; pod: Pod }>();
  readonly #failed = new Set<string>();

  constructor(deps: UnschedulableWatchDeps) {
    this.#deps = deps;
  }

  /** A downstream pod was added or changed. */
  observe(pod: Pod): void {
    const uid = pod.metadata?.uid ?? "";
    const condition = unschedulableCondition(pod);
    if (!condition || this.#failed.has(uid)) {
      this.#pending.delete(uid);
      return;
    }
    const since = this.#pending.get(uid)?.sinceMs ??
      Math.min(Date.parse(condition.lastTransitionTime ?? "") || Infinity, this.#deps.clock.now());
    this.#pending.set(uid, { sinceMs: since, pod });
  }

  /** A downstream pod is gone. */
  forget(pod: Pod): void {
    this.#pending.delete(pod.metadata?.uid ?? "");
    this.#failed.delete(pod.metadata?.uid ?? "");
  }

  /** Checks every second (or at a tenth of the timeout) until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const everyMs = Math.min(1_000, Math.max(100, this.#deps.timeoutMs / 10));
    while (!signal.aborted) {
      if (!await this.#deps.clock.sleep(everyMs, signal).then(() => true, () => false)) return;
      if (this.#deps.active?.() ?? true) this.check();
    }
  }

  /** Fails the pods unschedulable for longer than the timeout. */
  check(): void {
    const now = this.#deps.clock.now();
    for (const [uid, { sinceMs, pod }] of this.#pending) {
      if (now - sinceMs < this.#deps.timeoutMs) continue;
      this.#pending.delete(uid);
      this.#failed.add(uid);
      const reason = unschedulableCondition(pod)?.message ?? "no node can take the pod";
      this.#deps.fail(
        pod,
        `The pod stayed unschedulable in the downstream cluster for more than ${
          Math.round(this.#deps.timeoutMs / 1000)
        } s (unschedulableTimeout): ${reason}`,
      );
    }
  }
}
