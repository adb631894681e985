/**
 * Kubernetes resource quantities ("100m", "1.5Gi", "2e3") read exactly, as apimachinery's
 * `resource.Quantity` does, so that downward-API resource values match the kubelet's digit for
 * digit; {@link quantityToNumber} gives a plain number where rounding does not matter.
 * @module
 */

/** An exact quantity: `numerator / denominator`. */
export interface Quantity {
  /** The value's numerator (signed). */
  numerator: bigint;
  /** The value's denominator (positive). */
  denominator: bigint;
}

const BINARY: Record<string, bigint> = {
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
  Pi: 1n << 50n,
  Ei: 1n << 60n,
};
const DECIMAL: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  "": 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};

const QUANTITY = /^([+-]?)(\d*)(?:\.(\d*))?(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$/;

/** Parses a quantity; throws a `RangeError` naming the text when it is not one. */
export function parseQuantity(text: string | number): Quantity {
  const s = String(text).trim();
  const match = QUANTITY.exec(s);
  if (!match || (match[2] === "" && (match[3] ?? "") === "")) {
    throw new RangeError(`quantity ${JSON.stringify(s)} is not a Kubernetes quantity`);
  }
  const [, sign, whole, fraction = "", exponent, suffix = ""] = match;
  let numerator = BigInt((whole || "0") + fraction);
  let scale = -fraction.length;
  if (exponent) scale += Number(exponent.slice(1));
  else if (suffix in BINARY) numerator *= BINARY[suffix];
  else scale += DECIMAL[suffix];
  if (sign === "-") numerator = -numerator;
  return scale >= 0
    ? { numerator: numerator * 10n ** BigInt(scale), denominator: 1n }
    : { numerator, denominator: 10n ** BigInt(-scale) };
}

/** The quantity times 10^`scale`, rounded up (apimachinery's `ScaledValue`). */
export function scaledValue(q: Quantity, scale: number): bigint {
  const n = scale >= 0 ? q.numerator * 10n ** BigInt(scale) : q.numerator;
  const d = scale >= 0 ? q.denominator : q.denominator * 10n ** BigInt(-scale);
  const quotient = n / d;
  return n % d > 0n ? quotient + 1n : quotient;
}

/** `Quantity.Value()`: the whole value, rounded up. */
export function quantityValue(q: Quantity): bigint {
  return scaledValue(q, 0);
}

/** `Quantity.MilliValue()`: the value in thousandths, rounded up. */
export function quantityMilliValue(q: Quantity): bigint {
  return scaledValue(q, 3);
}

/**
 * A quantity as a plain number (`"1.5Gi"` → 1610612736), or `undefined` when the text is not a
 * quantity: enough to validate a config or add up requests, where float rounding is harmless.
 */
export function quantityToNumber(text: string | number): number | undefined {
  if (typeof text === "number") return Number.isFinite(text) ? text : undefined;
  try {
    const q = parseQuantity(text);
    return Number(q.numerator) / Number(q.denominator);
  } catch {
    return undefined;
  }
}
