/**
 * Scheduling aimed at B (tensile-kube's approach): the annotations of {@link AIM} on the upstream
 * pod, parsed and checked; a malformed one fails the pod with the annotation's name.
 * @module
 */
import type { Affinity } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError } from "../../../provider/mod.ts";
import { AIM } from "../names.ts";

/** The B-side constraints the pod's annotations ask for ({@link AIM}); throws when malformed. */
export function aimedAtB(
  annotations: Record<string, string>,
): { nodeSelector?: Record<string, string>; affinity?: Affinity } {
  const parse = (name: string, check: (v: unknown) => boolean, example: string) => {
    const text = annotations[name];
    if (text === undefined) return undefined;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    if (!value || typeof value !== "object" || Array.isArray(value) || !check(value)) {
      throw new InvalidInputError(
        `annotation ${name}: expected a JSON object such as ${example}, got ${
          JSON.stringify(text)
        }`,
      );
    }
    return value;
  };
  return {
    nodeSelector: parse(
      AIM.nodeSelector,
      (v) => Object.values(v as object).every((x) => typeof x === "string"),
      '{"example.com/gpu":"a100"}',
    ) as Record<string, string> | undefined,
    affinity: parse(
      AIM.affinity,
      (v) => Object.keys(v as object).every((k) => AFFINITY_KINDS.has(k)),
      '{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{...}}}',
    ) as Affinity | undefined,
  };
}

const AFFINITY_KINDS = new Set(["nodeAffinity", "podAffinity", "podAntiAffinity"]);
