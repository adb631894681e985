/**
 * The pod's QoS class, as kubernetes/kubernetes pkg/apis/core/v1/helper/qos/qos.go decides it
 * from the containers' CPU and memory requests and limits.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { quantityToNumber } from "../k8s/quantity.ts";

/**
 * Guaranteed (every request equals its limit), Burstable (some set) or BestEffort (none).
 *
 * @example Usage
 * ```ts
 * import { qosClass } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * const pod = { spec: { containers: [{ name: "main", resources: { requests: { cpu: "100m" } } }] } };
 * assert.equal(qosClass(pod), "Burstable");
 * ```
 */
export function qosClass(pod: Pod): "Guaranteed" | "Burstable" | "BestEffort" {
  const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  let anySet = false;
  let guaranteed = containers.length > 0;
  for (const container of containers) {
    for (const resource of ["cpu", "memory"]) {
      const limit = container.resources?.limits?.[resource];
      const request = container.resources?.requests?.[resource] ?? limit;
      if (limit !== undefined || request !== undefined) anySet = true;
      if (limit === undefined || quantityToNumber(request!) !== quantityToNumber(limit)) {
        guaranteed = false;
      }
    }
  }
  return !anySet ? "BestEffort" : guaranteed ? "Guaranteed" : "Burstable";
}
