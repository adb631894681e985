/**
 * `env[].valueFrom.resourceFieldRef`: a container's requests and limits with a divisor, as
 * kubernetes/kubernetes pkg/api/v1/resource/helpers.go `ExtractContainerResourceValue` computes
 * them (CPU in ceil(milli / divisor milli), everything else in ceil(value / divisor value)).
 * Unset limits default to the node's allocatable, as the kubelet's
 * `defaultPodLimitsForDownwardAPI` does, so a container without a memory limit sees the node's.
 * @module
 */
import type { Container, Pod, ResourceFieldSelector } from "kubernetes-types/core/v1.d.ts";
import {
  parseQuantity,
  type Quantity,
  quantityMilliValue,
  quantityValue,
} from "../../k8s/quantity.ts";

/** Quantities by resource name, as in `status.allocatable`. */
export type ResourceList = Record<string, string | number>;

type ContainerLike = Pick<Container, "name" | "resources">;

const DEFAULTED_LIMITS = ["cpu", "memory", "ephemeral-storage"];

/** Resolves one resourceFieldRef for `container`; throws an `Error` for an unknown resource. */
export function resolveResourceFieldRef(
  pod: Pod,
  container: ContainerLike,
  ref: ResourceFieldSelector,
  allocatable: ResourceList,
): string {
  let target = container;
  if (ref.containerName) {
    const named = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])]
      .find((c) => c.name === ref.containerName);
    if (!named) throw new Error(`container ${ref.containerName} not found`);
    target = named;
  }
  const divisor = ref.divisor === undefined || isZero(String(ref.divisor))
    ? parseQuantity("1")
    : parseQuantity(String(ref.divisor));
  const dot = ref.resource.indexOf(".");
  const kind = ref.resource.slice(0, dot);
  const name = ref.resource.slice(dot + 1);
  const supported = ["cpu", "memory", "ephemeral-storage"].includes(name) ||
    name.startsWith("hugepages-");
  if ((kind !== "requests" && kind !== "limits") || !supported) {
    throw new Error(`unsupported container resource : ${ref.resource}`);
  }
  const list = kind === "limits"
    ? withDefaultLimits(target.resources?.limits ?? {}, allocatable)
    : target.resources?.requests ?? {};
  const amount = parseQuantity(String(list[name] ?? "0"));
  return divide(amount, divisor, name === "cpu");
}

function isZero(text: string): boolean {
  try {
    return parseQuantity(text).numerator === 0n;
  } catch {
    return false;
  }
}

function withDefaultLimits(limits: ResourceList, allocatable: ResourceList): ResourceList {
  const merged: ResourceList = { ...limits };
  for (const name of DEFAULTED_LIMITS) {
    if (merged[name] === undefined && allocatable[name] !== undefined) {
      merged[name] = allocatable[name];
    }
  }
  return merged;
}

// Go divides as float64 and rounds up; Number() does the same conversion.
function divide(amount: Quantity, divisor: Quantity, cpu: boolean): string {
  const a = Number(cpu ? quantityMilliValue(amount) : quantityValue(amount));
  const d = Number(cpu ? quantityMilliValue(divisor) : quantityValue(divisor));
  return String(Math.ceil(a / d));
}
