/**
 * Kubernetes resource quantities (`100m`, `1.5Gi`, `2e3`) as plain numbers, enough to validate a
 * config and to compare requests with limits. Suffixes as in kubernetes/apimachinery
 * pkg/api/resource/quantity.go; numbers are floats, so huge exact values may round.
 * @module
 */

const SUFFIX: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  "": 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const QUANTITY =
  /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$/;

/** The value of a quantity string or number, or `undefined` if it is not a quantity. */
export function parseQuantity(quantity: string | number): number | undefined {
  if (typeof quantity === "number") return Number.isFinite(quantity) ? quantity : undefined;
  const match = QUANTITY.exec(quantity.trim());
  if (!match) return undefined;
  const [, number, exponent, suffix] = match;
  if (exponent) return Number(number + exponent);
  return Number(number) * SUFFIX[suffix ?? ""];
}
