/**
 * The state one conformance run shares between its steps: the provider instance under test, the
 * statuses it pushed, the pod it runs, and bounded waits whose failures name the rule broken.
 * @module
 */
import type { Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import type { Provider, ProviderDeps } from "../contract.ts";
import { isTerminalPhase } from "../pod_phase.ts";
import { podKeyOf } from "../pod_table.ts";

/** One rule of the contract: a short id (for `skip`) and the sentence a failure quotes. */
export interface Rule {
  id: string;
  statement: string;
}

/** A failed contract rule; the message starts with the rule's id and statement. */
export class ConformanceError extends Error {
  override name = "ConformanceError";
  constructor(rule: Rule, detail: string, options?: { cause?: unknown }) {
    super(`[${rule.id}] ${rule.statement} — ${detail}`, options);
  }
}

/** A provider instance the run created, with its own shutdown signal. */
export interface Instance {
  provider: Provider;
  deps: ProviderDeps;
  shutdown: AbortController;
  /** Every pod it pushed through notifyPods, in order. */
  pushed: Pod[];
}

/** What the steps share. */
export interface Session {
  /** The instance for the node under test (replaced by the restart rule). */
  main: Instance;
  /** The suite's pod on that node, once created. */
  pod?: Pod;
  /** The pod is Running (later steps need it). */
  running: boolean;
  timeoutMs: number;
  /** Starts another instance for `nodeName` (records its pushes). */
  start(nodeName: string): Promise<Instance>;
  /** Every instance started, for clean-up. */
  instances: Instance[];
}

/**
 * Runs `call` with a signal that aborts after `ms`; rejects with the rule's error when it has not
 * settled by then (a provider call must never hang). A synchronous throw counts as a rejection.
 */
export async function within<T>(
  rule: Rule,
  what: string,
  ms: number,
  call: (signal: AbortSignal) => Promise<T> | T,
): Promise<T> {
  const deadline = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      deadline.abort(new Error(`deadline of ${ms} ms`));
      reject(new ConformanceError(rule, `${what} did not settle within ${ms} ms`));
    }, ms);
  });
  try {
    const running = new Promise<T>((resolve) => resolve(call(deadline.signal)));
    running.catch(() => {});
    return await Promise.race([running, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `check` every 25 ms of real time until it gives a value; fails the rule after `ms`. */
export async function eventually<T>(
  rule: Rule,
  what: string,
  ms: number,
  check: () => Promise<T | undefined | false> | T | undefined | false,
): Promise<T> {
  const end = Date.now() + ms;
  let last = "";
  while (true) {
    try {
      const value = await within(rule, what, Math.max(end - Date.now(), 1), () => check());
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      if (err instanceof ConformanceError) throw err;
      last = `; last error: ${err instanceof Error ? err.message : String(err)}`;
    }
    if (Date.now() >= end) {
      throw new ConformanceError(rule, `timed out after ${ms} ms waiting for ${what}${last}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The parts of a status the rules compare: phase and each container's state and readiness. */
export function statusSummary(status: PodStatus | undefined): string {
  const containers = [...status?.initContainerStatuses ?? [], ...status?.containerStatuses ?? []]
    .map((c) => `${c.name}:${Object.keys(c.state ?? {}).join("+") || "none"}:${c.ready}`)
    .sort();
  return `${status?.phase ?? "no phase"} [${containers.join(" ")}]`;
}

/** Names of containers the status shows running. */
export function runningContainers(status: PodStatus | undefined): string[] {
  return [...status?.initContainerStatuses ?? [], ...status?.containerStatuses ?? []]
    .filter((c) => c.state?.running).map((c) => c.name);
}

/** A terminal phase with no container running. */
export function isTerminal(status: PodStatus | undefined): boolean {
  return isTerminalPhase(status?.phase) && runningContainers(status).length === 0;
}

/** The last pod `instance` pushed for `pod` (same namespace, name and uid). */
export function lastPushed(instance: Instance, pod: Pod): Pod | undefined {
  return instance.pushed.findLast((p) =>
    podKeyOf(p) === podKeyOf(pod) && p.metadata?.uid === pod.metadata?.uid
  );
}

/** What identifies the running instance of each container: its id, start and restart count. */
export function containerIdentity(status: PodStatus | undefined): string {
  return JSON.stringify(
    (status?.containerStatuses ?? []).map((c) => [
      c.name,
      c.containerID,
      c.restartCount,
      c.state?.running?.startedAt,
    ]),
  );
}

/** The pod as the core hands it to deletePod (a copy): deletionTimestamp and grace period set. */
export function deleting(pod: Pod, nowMs: number): Pod {
  const copy = structuredClone(pod);
  copy.metadata = {
    ...copy.metadata,
    deletionTimestamp: new Date(nowMs).toISOString().replace(/\.\d+Z$/, "Z"),
    deletionGracePeriodSeconds: copy.spec?.terminationGracePeriodSeconds ?? 1,
  };
  return copy;
}

/** Deletes `pod` from `instance` if it has it, bounded; for clean-up, errors ignored. */
export async function removePod(instance: Instance, pod: Pod, ms: number): Promise<void> {
  const rule = { id: "clean-up", statement: "the suite removes what it created" };
  await within(
    rule,
    `deletePod(${podKeyOf(pod)})`,
    ms,
    (signal) => instance.provider.deletePod(deleting(pod, Date.now()), { signal }),
  ).catch(() => {});
}

/** Closes an instance (bounded) and aborts its shutdown signal, as a vkubelet exit would. */
export async function closeInstance(
  instance: Instance,
  ms: number,
  rule: Rule = { id: "clean-up", statement: "close settles" },
): Promise<void> {
  try {
    if (instance.provider.close) {
      await within(rule, "close()", ms, () => instance.provider.close!());
    }
  } finally {
    instance.shutdown.abort();
  }
}
