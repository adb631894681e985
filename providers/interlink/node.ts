/**
 * The node's capacity, labels and taints: capacity from the config, overridden field by field by
 * the resources a ping answer reports, and the ping's taints added, as interLink's virtual
 * kubelet does (interlink-hq/interLink, commit f632175701d78b604138ce2e1e38af13d1f7546b,
 * pkg/virtualkubelet/virtualkubelet.go `updateNodeResources`, `updateNodeTaints`).
 * @module
 */
import type { Taint } from "kubernetes-types/core/v1.d.ts";
import { type ProviderNodeFields, quantityToNumber } from "../../provider/mod.ts";
import type { InterlinkConfig } from "./config.ts";
import type { PingResponse } from "./client/wire.ts";

const EFFECTS = new Set(["NoSchedule", "PreferNoSchedule", "NoExecute"]);

/** The node's fields from the config and the last ping answer. */
export function nodeFieldsOf(config: InterlinkConfig, ping?: PingResponse): ProviderNodeFields {
  const capacity: Record<string, string> = { ...config.capacity };
  const valid = (q?: string) => q !== undefined && q !== "" && (quantityToNumber(q) ?? -1) >= 0;
  const r = ping?.resources;
  if (valid(r?.cpu)) capacity.cpu = r!.cpu!;
  if (valid(r?.memory)) capacity.memory = r!.memory!;
  if (valid(r?.pods)) capacity.pods = r!.pods!;
  for (const a of r?.accelerators ?? []) {
    if (a?.resourceType && valid(a.available)) capacity[a.resourceType] = a.available;
  }
  const taints: Taint[] = (ping?.taints ?? [])
    .filter((t) => t?.key && EFFECTS.has(t.effect))
    .map((t) => ({ key: t.key, effect: t.effect, ...(t.value ? { value: t.value } : {}) }));
  return {
    capacity,
    labels: { "kubernetes.io/os": "linux", "vkubelet.io/provider": "interlink" },
    ...(taints.length ? { taints } : {}),
  };
}

/**
 * The node as the pings show it: its fields from the config and the last ping answer, and the
 * callbacks told when a ping changes them (capacity, taints).
 */
export class InterlinkNode {
  readonly #config: InterlinkConfig;
  readonly #callbacks = new Set<() => void>();
  #ping?: PingResponse;

  constructor(config: InterlinkConfig) {
    this.#config = config;
  }

  /** The node's fields now. */
  fields(): ProviderNodeFields {
    return nodeFieldsOf(this.#config, this.#ping);
  }

  /** Calls `callback` whenever a ping changes the node's fields. */
  onChange(callback: () => void): void {
    this.#callbacks.add(callback);
  }

  /** Takes a ping's answer; tells the callbacks when the fields changed. */
  pinged(answer?: PingResponse): void {
    const before = JSON.stringify(this.fields());
    this.#ping = answer;
    if (JSON.stringify(this.fields()) !== before) {
      for (const callback of this.#callbacks) callback();
    }
  }
}
