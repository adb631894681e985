/**
 * The container group's SKU, confidential-compute policy, priority and diagnostics, from the
 * pod's annotations (azure-aci's spelling where it has one, pkg/provider/aci.go) and the
 * config's `logAnalytics`, as api-version 2023-05-01 names them (`sku`,
 * `confidentialComputeProperties.ccePolicy`, `priority`, `diagnostics.logAnalytics`).
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError } from "../../provider/mod.ts";
import type { AciConfig } from "./config.ts";

/** azure-aci's annotation for the group's SKU (Standard, Dedicated, Confidential). */
export const SKU_ANNOTATION = "virtual-kubelet.io/container-sku";
/** azure-aci's annotation for the confidential-compute enforcement policy (base64). */
export const CCE_POLICY_ANNOTATION = "virtual-kubelet.io/confidential-compute-cce-policy";
/** The group's priority (Regular or Spot); azure-aci has none, so the name is vkubelet's. */
export const PRIORITY_ANNOTATION = "vkubelet.io/aci-priority";

const SKUS = ["Standard", "Dedicated", "Confidential"] as const;
const PRIORITIES = ["Regular", "Spot"] as const;

function oneOf<T extends string>(choices: readonly T[], key: string, value: string): T {
  const found = choices.find((c) => c.toLowerCase() === value.trim().toLowerCase());
  if (!found) {
    throw new InvalidInputError(
      `metadata.annotations[${key}]: ${JSON.stringify(value)} is not one of ${choices.join(", ")}`,
    );
  }
  return found;
}

function confidential(annotations: Record<string, string>) {
  const skuText = annotations[SKU_ANNOTATION];
  const policy = annotations[CCE_POLICY_ANNOTATION];
  const sku = skuText === undefined ? undefined : oneOf(SKUS, SKU_ANNOTATION, skuText);
  if (policy === undefined) return sku ? { sku } : {};
  if (sku && sku !== "Confidential") {
    throw new InvalidInputError(
      `metadata.annotations[${CCE_POLICY_ANNOTATION}]: a CCE policy needs the Confidential SKU, and ${SKU_ANNOTATION} says ${sku}`,
    );
  }
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(policy)) {
    throw new InvalidInputError(
      `metadata.annotations[${CCE_POLICY_ANNOTATION}]: the policy must be base64 (as az confcom writes it)`,
    );
  }
  return { sku: "Confidential", confidentialComputeProperties: { ccePolicy: policy } };
}

/** The group-level options the pod and config ask for. */
export function groupOptionsFor(pod: Pod, config: AciConfig) {
  const annotations = pod.metadata?.annotations ?? {};
  const priority = annotations[PRIORITY_ANNOTATION];
  const logs = config.logAnalytics;
  return {
    ...confidential(annotations),
    ...(priority !== undefined
      ? { priority: oneOf(PRIORITIES, PRIORITY_ANNOTATION, priority) }
      : {}),
    ...(logs ? { diagnostics: { logAnalytics: { ...logs } } } : {}),
  };
}
