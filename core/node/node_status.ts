/**
 * Which parts of the Node vkubelet owns, how to tell whether they need writing, and the
 * strategic merge patch that writes them while keeping everything other writers own.
 *
 * virtual-kubelet computes a three-way patch from last-applied annotations
 * (virtual-kubelet/virtual-kubelet node/node.go `prepareThreewayPatchBytesForNodeStatus`); the
 * kubelet diffs against a fresh GET (kubernetes/kubernetes pkg/kubelet/kubelet_node_status.go
 * `tryUpdateNodeStatus`). Here the patch names only our keys: conditions merge by `type`,
 * labels, annotations and resources by key, so a foreign condition, label, annotation or
 * extended resource is never in the patch and so never touched. What we owned before and own
 * no more is removed explicitly; the list of owned keys lives in one annotation so that this
 * also works across restarts.
 * @module
 */
import type { Node, NodeCondition } from "kubernetes-types/core/v1.d.ts";
import { formatTime } from "../../k8s/micro_time.ts";

/** Annotation holding the keys vkubelet owns on its Node (JSON of {@link OwnedKeys}). */
export const OWNED_KEYS_ANNOTATION = "vkubelet.io/owned-keys";

/** The keys vkubelet wrote last time, per section of the Node. */
export interface OwnedKeys {
  labels: string[];
  annotations: string[];
  resources: string[];
  conditions: string[];
}

const EMPTY: OwnedKeys = { labels: [], annotations: [], resources: [], conditions: [] };

/** The keys `node` (a desired Node) would own. */
export function ownedKeys(node: Node): OwnedKeys {
  const status = node.status ?? {};
  const resources = new Set([
    ...Object.keys(status.capacity ?? {}),
    ...Object.keys(status.allocatable ?? {}),
  ]);
  return {
    labels: Object.keys(node.metadata?.labels ?? {}).sort(),
    annotations: Object.keys(node.metadata?.annotations ?? {})
      .filter((k) => k !== OWNED_KEYS_ANNOTATION).sort(),
    resources: [...resources].sort(),
    conditions: (status.conditions ?? []).map((c) => c.type).sort(),
  };
}

/** The keys a server Node says vkubelet owned (from {@link OWNED_KEYS_ANNOTATION}). */
export function readOwnedKeys(node: Node | undefined): OwnedKeys {
  const text = node?.metadata?.annotations?.[OWNED_KEYS_ANNOTATION];
  if (!text) return EMPTY;
  try {
    const parsed = JSON.parse(text);
    const list = (v: unknown) => Array.isArray(v) ? v.filter((x) => typeof x === "string") : [];
    return {
      labels: list(parsed.labels),
      annotations: list(parsed.annotations),
      resources: list(parsed.resources),
      conditions: list(parsed.conditions),
    };
  } catch {
    return EMPTY; // Someone edited it by hand; forget the past rather than fail.
  }
}

/**
 * A stable text of the fields `owned` names in `node`, without heartbeat and transition
 * times: two nodes with the same view need no write between them.
 */
export function ownedView(node: Node | undefined, owned: OwnedKeys): string {
  const status = node?.status ?? {};
  const pick = (map: Record<string, string> | undefined, keys: string[]) =>
    keys.map((k) => [k, map?.[k] ?? null]);
  const conditions = owned.conditions.map((type) => {
    const c = status.conditions?.find((x) => x.type === type);
    return c ? [type, c.status, c.reason ?? "", c.message ?? ""] : [type, null];
  });
  return JSON.stringify([
    pick(node?.metadata?.labels, owned.labels),
    pick(node?.metadata?.annotations, owned.annotations),
    pick(status.capacity, owned.resources),
    pick(status.allocatable, owned.resources),
    conditions,
    status.addresses ?? [],
    status.daemonEndpoints ?? {},
    status.nodeInfo ?? {},
    declaredFeatures(node) ?? [],
  ]);
}

/** Sets heartbeat and transition times on `desired`'s conditions, keeping transitions from `server`. */
export function stampConditions(
  desired: NodeCondition[],
  server: NodeCondition[] | undefined,
  now: number,
): NodeCondition[] {
  const time = formatTime(now);
  return desired.map((c) => {
    const previous = server?.find((s) => s.type === c.type);
    const unchanged = previous?.status === c.status && previous.lastTransitionTime;
    return {
      ...c,
      lastHeartbeatTime: time,
      lastTransitionTime: unchanged ? previous.lastTransitionTime : time,
    };
  });
}

/** The Node to create: the desired one with stamped conditions and the owned-keys annotation. */
export function nodeForCreate(desired: Node, now: number): Node {
  const node = structuredClone(desired);
  node.status!.conditions = stampConditions(node.status?.conditions ?? [], undefined, now);
  node.metadata!.annotations = {
    ...node.metadata!.annotations,
    [OWNED_KEYS_ANNOTATION]: JSON.stringify(ownedKeys(desired)),
  };
  return node;
}

/**
 * The strategic merge patch for `nodes/<name>/status` that makes `server` carry `desired`'s
 * owned fields, removes what `previous` owned and `desired` no longer does, and leaves every
 * other key alone. `spec` is never in it: the status subresource ignores spec, and a node may
 * not change its own taints (NodeRestriction).
 */
export function statusPatch(
  desired: Node,
  server: Node | undefined,
  previous: OwnedKeys,
  now: number,
): Record<string, unknown> {
  const owned = ownedKeys(desired);
  const status = desired.status ?? {};
  const conditions: unknown[] = stampConditions(
    status.conditions ?? [],
    server?.status?.conditions,
    now,
  );
  for (const type of removed(previous.conditions, owned.conditions)) {
    conditions.push({ $patch: "delete", type });
  }
  return {
    metadata: {
      labels: withRemovals(desired.metadata?.labels, previous.labels),
      annotations: {
        ...withRemovals(desired.metadata?.annotations, previous.annotations),
        [OWNED_KEYS_ANNOTATION]: JSON.stringify(owned),
      },
    },
    status: {
      capacity: withRemovals(status.capacity, previous.resources),
      allocatable: withRemovals(status.allocatable, previous.resources),
      conditions,
      // Addresses merge by type, which folds two addresses of one type (dual stack) into one;
      // they are all ours, so the patch replaces the whole list.
      addresses: [{ $patch: "replace" }, ...(status.addresses ?? [])],
      daemonEndpoints: status.daemonEndpoints,
      nodeInfo: status.nodeInfo,
      declaredFeatures: declaredFeatures(desired),
    },
  };
}

/** `status.declaredFeatures`, which `kubernetes-types` (1.30) does not know yet. */
export function declaredFeatures(node: Node | undefined): string[] | undefined {
  return (node?.status as { declaredFeatures?: string[] } | undefined)?.declaredFeatures;
}

function removed(before: string[], now: string[]): string[] {
  return before.filter((k) => !now.includes(k));
}

/** `map` plus `null` for each key in `previous` that `map` lacks (null deletes in a merge patch). */
function withRemovals(
  map: Record<string, string> | undefined,
  previous: string[],
): Record<string, string | null> {
  const out: Record<string, string | null> = { ...map };
  for (const key of previous) if (!(key in out)) out[key] = null;
  return out;
}

/** `node` without the labels in `forbidden` (those the apiserver refuses to let us set). */
export function withoutLabels(node: Node, forbidden: ReadonlySet<string>): Node {
  if (forbidden.size === 0) return node;
  const labels = Object.fromEntries(
    Object.entries(node.metadata?.labels ?? {}).filter(([k]) => !forbidden.has(k)),
  );
  return { ...node, metadata: { ...node.metadata, labels } };
}
