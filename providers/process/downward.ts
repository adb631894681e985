/**
 * Downward API values for volumes (`downwardAPI` and projected `downwardAPI` sources), as the
 * kubelet computes them: metadata fields (kubernetes/kubernetes pkg/api/v1/pod/util.go,
 * pkg/fieldpath/fieldpath.go `FormatMap` for labels and annotations) and container resources
 * rounded up by the divisor, with the node's allocatable standing in for a missing limit
 * (pkg/api/v1/resource/helpers.go `ExtractContainerResourceValue`).
 * @module
 */
import type {
  Container,
  ObjectFieldSelector,
  Pod,
  ResourceFieldSelector,
} from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError } from "../../provider/mod.ts";
import { quantityToNumber } from "../../k8s/quantity.ts";

/** Go's `%q` of a string, close enough for label and annotation values. */
function quote(value: string): string {
  return JSON.stringify(value);
}

/** `key="value"` lines, sorted by key, as the kubelet writes labels and annotations. */
export function formatMap(map: Record<string, string> | undefined): string {
  return Object.keys(map ?? {}).sort().map((k) => `${k}=${quote(map![k])}`).join("\n");
}

/** The value of a `fieldRef` in a downward API volume item. */
export function fieldValue(pod: Pod, ref: ObjectFieldSelector): string {
  const meta = pod.metadata ?? {};
  const path = ref.fieldPath;
  const subscript = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
  if (subscript) {
    const map = subscript[1] === "labels" ? meta.labels : meta.annotations;
    return map?.[subscript[2]] ?? "";
  }
  switch (path) {
    case "metadata.name":
      return meta.name ?? "";
    case "metadata.namespace":
      return meta.namespace ?? "";
    case "metadata.uid":
      return meta.uid ?? "";
    case "metadata.labels":
      return formatMap(meta.labels);
    case "metadata.annotations":
      return formatMap(meta.annotations);
  }
  throw new InvalidInputError(
    `downward API volume field ${path} is not supported in volumes; use metadata.name, metadata.namespace, metadata.uid, metadata.labels or metadata.annotations`,
  );
}

/** The value of a `resourceFieldRef`, rounded up to whole divisors. */
export function resourceValue(
  pod: Pod,
  ref: ResourceFieldSelector,
  allocatable: Record<string, string>,
): string {
  const containers: Container[] = [
    ...(pod.spec?.containers ?? []),
    ...(pod.spec?.initContainers ?? []),
  ];
  const container = containers.find((c) => c.name === ref.containerName);
  if (!container) {
    throw new InvalidInputError(
      `resourceFieldRef names container ${ref.containerName ?? "(none)"}, which is not in the pod`,
    );
  }
  const [kind, resource] = ref.resource.split(".", 2) as [string, string];
  const listed = kind === "limits"
    ? container.resources?.limits?.[resource]
    : container.resources?.requests?.[resource];
  const fallback = kind === "limits" ? allocatable[resource] : "0";
  const value = quantityToNumber(listed ?? fallback ?? "0") ?? 0;
  const divisor = quantityToNumber(ref.divisor ?? "1") || 1;
  return String(Math.ceil(value / divisor));
}
