/**
 * Pod status as vkubelet writes it: the provider's report merged with what other writers own
 * (the scheduler's PodScheduled, readiness gates, qosClass), compared in a canonical form so that
 * a write that would change nothing is skipped, and the kubelet-style lifecycle events a status
 * change implies. The statuses the controller writes itself are `controller_status.ts`'s.
 * @module
 */
import type {
  ContainerStatus,
  Pod,
  PodCondition,
  PodReadinessGate,
  PodStatus,
} from "kubernetes-types/core/v1.d.ts";
import { formatTime } from "../../k8s/micro_time.ts";
import type { PodEvent } from "./events.ts";
import { gatedConditions } from "./readiness_gates.ts";

/** The conditions a kubelet writes for its pods; PodScheduled is the scheduler's. */
const KUBELET_CONDITIONS = new Set([
  "PodReadyToStartContainers",
  "Initialized",
  "ContainersReady",
  "Ready",
]);

const TIME = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$/;

/** Options for {@link mergeStatus}. */
export interface MergeOptions {
  /** The node's IPs, for status.hostIP(s) when the provider reports none. */
  hostIps: string[];
  /** The pod's `spec.readinessGates`: Ready stays False until their conditions are True. */
  readinessGates?: PodReadinessGate[];
  /** Now (clock ms), the lastTransitionTime of a condition that changed and has none. */
  now?: number;
}

/**
 * The status to write: `reported` plus what the API's copy holds that the provider does not own
 * (the scheduler's PodScheduled, readiness gates' conditions, qosClass), with Ready as the
 * readiness gates allow.
 */
export function mergeStatus(
  current: PodStatus | undefined,
  reported: PodStatus,
  options: MergeOptions,
): PodStatus {
  const { hostIps } = options;
  // truncateTimes copies only what it changes: `out` shares the rest with `reported` (the
  // provider's own objects, which the informer's copy of the written status then shares too), so
  // nothing below changes `out` or its parts.
  const out: PodStatus = truncateTimes(reported);
  const reportedTypes = new Set((out.conditions ?? []).map((c) => c.type));
  // A report with any of the kubelet's own conditions has all it means to have: the others in
  // the API's copy were written by us earlier (a held pod's, say) and are not kept.
  const ownsKubelets = [...reportedTypes].some((t) => KUBELET_CONDITIONS.has(t));
  const kept = (current?.conditions ?? []).filter((c) =>
    !reportedTypes.has(c.type) && !(ownsKubelets && KUBELET_CONDITIONS.has(c.type))
  );
  const now = options.now === undefined
    ? undefined
    : truncateTime(new Date(options.now).toISOString());
  // Conditions kept from the API's copy are other writers': never restamped.
  const conditions = gatedConditions(
    options.readinessGates,
    [...out.conditions ?? [], ...kept],
    out.containerStatuses,
  ).map((c) => kept.includes(c) ? c : keepTransitionTime(c, current?.conditions, now));
  const addHost = !out.hostIP && hostIps.length > 0;
  // The apiserver owns qosClass (immutable once set); the scheduler owns nominatedNodeName.
  return {
    ...out,
    ...(conditions.length > 0 ? { conditions: sameItems(out.conditions, conditions) } : {}),
    ...(addHost ? { hostIP: hostIps[0], hostIPs: hostIps.map((ip) => ({ ip })) } : {}),
    qosClass: current?.qosClass ?? out.qosClass,
    nominatedNodeName: current?.nominatedNodeName ?? out.nominatedNodeName,
    startTime: out.startTime ?? current?.startTime,
  };
}

/** `before` itself when `after` holds the same items in the same order, else `after`. */
function sameItems<T>(before: T[] | undefined, after: T[]): T[] {
  return before?.length === after.length && after.every((x, i) => x === before[i]) ? before : after;
}

// A provider that stamps "now" on every report must not make every report a write; a condition
// that changed without a time gets `now`, as the kubelet stamps every transition.
function keepTransitionTime(
  c: PodCondition,
  previous: PodCondition[] | undefined,
  now: string | undefined,
): PodCondition {
  const old = previous?.find((p) => p.type === c.type);
  if (old && old.status === c.status && old.lastTransitionTime) {
    return c.lastTransitionTime === old.lastTransitionTime
      ? c
      : { ...c, lastTransitionTime: old.lastTransitionTime };
  }
  return c.lastTransitionTime || !now ? c : { ...c, lastTransitionTime: now };
}

/**
 * Whole-second UTC times, as the apiserver stores `metav1.Time`. Copies only the objects and
 * arrays in which a time changed; the rest is `value`'s own (read-only, as the provider's are).
 */
export function truncateTimes<T>(value: T): T {
  if (typeof value === "string") return truncateTime(value) as T;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const t = truncateTimes(value[i]);
      if (t !== value[i]) (out ??= [...value])[i] = t;
    }
    return (out ?? value) as T;
  }
  if (value && typeof value === "object") {
    let out: Record<string, unknown> | undefined;
    for (const k in value) {
      const v = (value as Record<string, unknown>)[k];
      const t = truncateTimes(v);
      if (t !== v) (out ??= { ...value } as Record<string, unknown>)[k] = t;
    }
    return (out ?? value) as T;
  }
  return value;
}

function truncateTime(value: string): string {
  // Most strings are not times: look at the shape before running the expression.
  if (value.length < 20 || value[4] !== "-" || value[10] !== "T") return value;
  // Most times are already whole-second UTC, as the apiserver writes them.
  if (value.length === 20 && isWholeSecondUtc(value)) return value;
  const m = TIME.exec(value);
  if (!m) return value;
  return formatTime(Date.parse(value));
}

// `YYYY-MM-DDTHH:MM:SSZ`, checked by character (no expression, no Date): the form to keep as is.
function isWholeSecondUtc(value: string): boolean {
  for (let i = 0; i < 20; i++) {
    const c = value.charCodeAt(i);
    const want = WHOLE_SECOND_UTC[i];
    if (want === 0 ? c < 48 || c > 57 : c !== want) return false;
  }
  return true;
}

/** Per position of `YYYY-MM-DDTHH:MM:SSZ`: the character code wanted there, or 0 for a digit. */
const WHOLE_SECOND_UTC = [..."0000-00-00T00:00:00Z"].map((c) => c === "0" ? 0 : c.charCodeAt(0));

/**
 * True when `a` and `b` are equal in canonical form: keys in any order, empty values (undefined,
 * null, "", empty lists and objects, as Go's omitempty drops them) left out, times as whole UTC
 * seconds. Walks the two side by side, stops at the first difference and allocates nothing;
 * parts the two share are equal at once.
 */
export function canonicalEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  const aEmpty = isCanonicallyEmpty(a);
  const bEmpty = isCanonicallyEmpty(b);
  if (aEmpty || bEmpty) return aEmpty && bEmpty;
  if (typeof a === "string") return typeof b === "string" && truncateTime(a) === truncateTime(b);
  if (typeof a !== "object" || typeof b !== "object") {
    // Numbers equal as JSON (NaN and Infinity are both null there); everything else by identity.
    return typeof a === "number" && typeof b === "number" &&
      JSON.stringify(a) === JSON.stringify(b);
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b)) return false;
    // Empty items are dropped from the canonical form: compare what is left, in order.
    let i = 0;
    let j = 0;
    while (true) {
      while (i < a.length && isCanonicallyEmpty(a[i])) i++;
      while (j < b.length && isCanonicallyEmpty(b[j])) j++;
      if (i === a.length || j === b.length) return i === a.length && j === b.length;
      if (!canonicalEqual(a[i], b[j])) return false;
      i++;
      j++;
    }
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  for (const k in x) {
    if (!Object.hasOwn(x, k)) continue;
    if (!canonicalEqual(x[k], Object.hasOwn(y, k) ? y[k] : undefined)) return false;
  }
  for (const k in y) {
    if (Object.hasOwn(y, k) && !Object.hasOwn(x, k) && !isCanonicallyEmpty(y[k])) return false;
  }
  return true;
}

/** True for what the canonical form leaves out: undefined, null, "", and lists and objects of those. */
function isCanonicallyEmpty(value: unknown): boolean {
  if (value === undefined || value === null || value === "") return true;
  if (typeof value !== "object") return false;
  if (Array.isArray(value)) {
    for (const item of value) if (!isCanonicallyEmpty(item)) return false;
    return true;
  }
  for (const k in value) {
    if (
      Object.hasOwn(value, k) && !isCanonicallyEmpty((value as Record<string, unknown>)[k])
    ) return false;
  }
  return true;
}

/** True when writing `next` over `current` would change nothing. */
export function statusEqual(current: PodStatus | undefined, next: PodStatus): boolean {
  // Equal as they are (often the same objects: see mergeStatus) is equal in canonical form too;
  // the API's copy differs from a report mostly in nulls (`lastProbeTime: null`) and key order.
  return canonicalEqual(current, next);
}

/**
 * Lifecycle events a kubelet would report for the change from `before` to `after`.
 *
 * The kubelet records `Created` and `Started` at every start of a container and `BackOff` at every
 * sync in back-off (kubernetes/kubernetes pkg/kubelet/kuberuntime/kuberuntime_container.go
 * `startContainer`, kuberuntime_manager.go `doBackOff`). Here they are read from two statuses
 * the API held, and statuses are coalesced on their way (the status queue keeps the latest of a
 * key): a container that starts and crashes within one write shows up as a back-off followed by
 * a back-off. So a start is what moved the container's latest instance (a new `startedAt`, or a
 * higher `restartCount`), not only a `running` state seen; and a back-off is reported again after
 * every restart, not only when the waiting reason changes. Without that, a crash-looping pod's
 * events stopped repeating once its restarts were quicker than a status write.
 */
export function lifecycleEvents(
  pod: Pod,
  before: PodStatus | undefined,
  after: PodStatus,
): PodEvent[] {
  const events: PodEvent[] = [];
  const lists = [
    ["initContainers", before?.initContainerStatuses, after.initContainerStatuses],
    ["containers", before?.containerStatuses, after.containerStatuses],
  ] as const;
  for (const [list, old, now] of lists) {
    for (const status of now ?? []) {
      const previous = old?.find((s) => s.name === status.name);
      const fieldPath = `spec.${list}{${status.name}}`;
      const restarted = (status.restartCount ?? 0) > (previous?.restartCount ?? 0);
      const latest = latestStart(status);
      if (latest !== undefined && (restarted || latest !== latestStart(previous))) {
        events.push(
          {
            type: "Normal",
            reason: "Created",
            message: `Created container ${status.name}`,
            fieldPath,
          },
          {
            type: "Normal",
            reason: "Started",
            message: `Started container ${status.name}`,
            fieldPath,
          },
        );
      }
      const waiting = status.state?.waiting?.reason;
      if (!waiting) continue;
      if (previous?.state?.waiting?.reason === waiting && !restarted) continue;
      if (waiting === "CrashLoopBackOff") {
        const podName = `${pod.metadata?.name}_${pod.metadata?.namespace}(${pod.metadata?.uid})`;
        events.push({
          type: "Warning",
          reason: "BackOff",
          message: `Back-off restarting failed container ${status.name} in pod ${podName}`,
          fieldPath,
        });
      } else if (FAILED_WAITING.has(waiting) && previous?.state?.waiting?.reason !== waiting) {
        const detail = status.state?.waiting?.message;
        events.push({
          type: "Warning",
          reason: "Failed",
          message: `Error: ${detail || waiting}`,
          fieldPath,
        });
      }
    }
  }
  return events;
}

/**
 * When the container's latest instance started: running now, ended, or ended before a wait
 * (`lastState`); undefined when no instance ever started (an instance that could not start,
 * `StartError`, is reported by a `Failed` event of its own, not a start).
 */
function latestStart(status: ContainerStatus | undefined): string | undefined {
  const state = status?.state;
  if (state?.running) return state.running.startedAt;
  const ended = state?.terminated ?? (state?.waiting ? status?.lastState?.terminated : undefined);
  if (!ended || NOT_STARTED.has(ended.reason ?? "")) return undefined;
  return ended.startedAt;
}

/** Terminations of an instance that never ran. */
const NOT_STARTED = new Set(["StartError", "ContainerCannotRun"]);

// Waiting reasons the kubelet reports with a `Failed` event (CreateContainerConfigError is
// reported where it happens, in env resolution).
const FAILED_WAITING = new Set([
  "ErrImagePull",
  "ImagePullBackOff",
  "InvalidImageName",
  "CreateContainerError",
  "RunContainerError",
]);
