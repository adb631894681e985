/**
 * Which container groups a status round reads. ACI's list (ContainerGroups_ListByResourceGroup)
 * cannot stand in for the reads: the 2023-05-01 description types its items as the GET's
 * ContainerGroup, so an `instanceView` is allowed but not promised, its published example has
 * none, and azure-aci reads every group again after listing because the list "doesn't return
 * InstanceView status" (virtual-kubelet/azure-aci pkg/provider/aci.go, GetPods) — and the
 * containers' states are all a pod's status is made of. So each group is read with a GET, but
 * not each round: a group whose state can change soon (provisioning, its containers waiting or
 * starting, one ended that the restart policy restarts) is read every round (`statusInterval`);
 * a steady one (every container running, or ended for good) once per `steadyStatusInterval`,
 * stretched when the steady groups would need more than 80% of the read budget
 * (`./read_budget.ts`). A deleted group's reads are its deletion's own polls.
 *
 * The staleness bound this gives: a steady pod's status is at most {@link ReadSchedule.steadyMs}
 * old, plus the difference between two rounds' lengths (a group is read a round early, by the
 * last round's length), a changing pod's one round (`statusInterval` plus the reads' time).
 * @module
 */
import type { ContainerGroup } from "../azure.ts";

/** What the schedule keeps of a pod's group. */
interface LastRead {
  atMs: number;
  steady: boolean;
}

/** What {@link ReadSchedule} is given. */
export interface ReadScheduleOptions {
  /** The round's interval, ms. */
  statusIntervalMs: number;
  /** How often a steady group is read at least, ms (stretched by the budget). */
  steadyIntervalMs: number;
  /** The read budget's sustained reads a second. */
  readsPerSecond: number;
}

/** Whether nothing in `group` changes until something outside it does; see the module doc. */
export function isSteady(group: ContainerGroup): boolean {
  if (group.provisioningState === "Failed") return true;
  if (group.provisioningState !== "Succeeded") return false;
  const policy = group.restartPolicy ?? "Always";
  return group.containers.every((c) => {
    const state = c.instanceView?.currentState;
    if (state?.state === "Running") return true;
    if (state?.state !== "Terminated") return false;
    return policy === "Never" || (policy === "OnFailure" && (state.exitCode ?? 0) === 0);
  });
}

/** The rounds' choice of groups to read, by pod uid; see the module doc. */
export class ReadSchedule {
  readonly #o: ReadScheduleOptions;
  readonly #last = new Map<string, LastRead>();
  #lastRoundMs?: number;

  constructor(options: ReadScheduleOptions) {
    this.#o = options;
  }

  /** A steady group's interval now: the configured one, or longer when many groups are steady. */
  steadyMs(): number {
    let steady = 0;
    for (const last of this.#last.values()) if (last.steady) steady++;
    const budgetMs = (steady * 1000) / (0.8 * this.#o.readsPerSecond);
    return Math.max(this.#o.steadyIntervalMs, budgetMs);
  }

  /** Of `uids`, those to read this round (`nowMs`), oldest read first. */
  due(uids: string[], nowMs: number): Set<string> {
    // A round early: a steady group is read in the last round before its time is up, not the one
    // after. A round is the interval plus the reads' own time, so it is measured, not assumed.
    const roundMs = Math.max(this.#o.statusIntervalMs, nowMs - (this.#lastRoundMs ?? -Infinity));
    this.#lastRoundMs = nowMs;
    const steadyMs = this.steadyMs() - Math.min(roundMs, this.#o.steadyIntervalMs / 2);
    const due = uids.filter((uid) => {
      const last = this.#last.get(uid);
      return !last || !last.steady || nowMs - last.atMs >= steadyMs;
    });
    const at = (uid: string) => this.#last.get(uid)?.atMs ?? -Infinity;
    return new Set(due.sort((a, b) => at(a) - at(b)));
  }

  /** The pod's group as just read (or as the create answered). */
  saw(uid: string, group: ContainerGroup, nowMs: number): void {
    this.#last.set(uid, { atMs: nowMs, steady: isSteady(group) });
  }

  /** The pod is gone. */
  forget(uid: string): void {
    this.#last.delete(uid);
  }
}
