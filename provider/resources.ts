/**
 * A container's size for a backend that sells fixed sizes (ECI specifications, Fargate task
 * sizes): of each resource, the larger of its request and its limit, so that a container never
 * gets less than it may use.
 * @module
 */
import type { Container } from "kubernetes-types/core/v1.d.ts";
import { quantityToNumber } from "../k8s/quantity.ts";
import { InvalidInputError } from "./errors.ts";

/**
 * The larger of `container`'s request and limit of `resource` as a number (cores, bytes; 0 when
 * it names neither); `field` names the container in the error a bad quantity gets
 * (`spec.containers[0]`).
 */
export function requestOrLimit(container: Container, resource: string, field: string): number {
  let most = 0;
  for (const kind of ["requests", "limits"] as const) {
    const text = container.resources?.[kind]?.[resource];
    if (text === undefined) continue;
    const value = quantityToNumber(text);
    if (value === undefined || value < 0) {
      throw new InvalidInputError(
        `${field}.resources.${kind}.${resource}: ${text} is not a quantity`,
      );
    }
    most = Math.max(most, value);
  }
  return most;
}
