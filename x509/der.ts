/**
 * A minimal DER encoder: just the ASN.1 types a PKCS#10 request and an X.509 certificate need
 * (ITU-T X.690). Every function returns the complete encoding (tag, length, contents).
 * @module
 */

/** Concatenates byte arrays. */
export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

function lengthBytes(length: number): Uint8Array {
  if (length < 0x80) return Uint8Array.of(length);
  const bytes: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) bytes.unshift(n & 0xff);
  return Uint8Array.of(0x80 | bytes.length, ...bytes);
}

/** A value with `tag` (one byte) and `contents`. */
export function tlv(tag: number, contents: Uint8Array): Uint8Array {
  return concat(Uint8Array.of(tag), lengthBytes(contents.length), contents);
}

/** SEQUENCE of already encoded values. */
export function sequence(...items: Uint8Array[]): Uint8Array {
  return tlv(0x30, concat(...items));
}

/** SET OF already encoded values, sorted as DER requires. */
export function set(...items: Uint8Array[]): Uint8Array {
  const sorted = [...items].sort(compareBytes);
  return tlv(0x31, concat(...sorted));
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return a[i] - b[i];
  }
  return a.length - b.length;
}

/** INTEGER from a non-negative safe integer or unsigned big-endian bytes. */
export function integer(value: number | Uint8Array): Uint8Array {
  let bytes: Uint8Array;
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new RangeError(`DER integer ${value} must be a non-negative safe integer`);
    }
    const list: number[] = [];
    for (let n = value; n > 0; n = Math.floor(n / 256)) list.unshift(n % 256);
    bytes = Uint8Array.from(list.length ? list : [0]);
  } else {
    let start = 0;
    while (start < value.length - 1 && value[start] === 0) start++;
    bytes = value.subarray(start);
    if (bytes.length === 0) bytes = Uint8Array.of(0);
  }
  // A set top bit would read as negative: prefix a zero byte.
  if (bytes[0] & 0x80) bytes = concat(Uint8Array.of(0), bytes);
  return tlv(0x02, bytes);
}

/** OBJECT IDENTIFIER from dotted text (`1.2.840.10045.2.1`). */
export function oid(dotted: string): Uint8Array {
  const arcs = dotted.split(".").map(Number);
  if (arcs.length < 2 || arcs.some((a) => !Number.isSafeInteger(a) || a < 0)) {
    throw new TypeError(`${JSON.stringify(dotted)} is not an object identifier`);
  }
  const out: number[] = [arcs[0] * 40 + arcs[1]];
  for (const arc of arcs.slice(2)) {
    const base128: number[] = [];
    for (let n = arc;; n = Math.floor(n / 128)) {
      base128.unshift((n % 128) | (base128.length ? 0x80 : 0));
      if (n < 128) break;
    }
    out.push(...base128);
  }
  return tlv(0x06, Uint8Array.from(out));
}

const text = (value: string) => new TextEncoder().encode(value);

/** UTF8String. */
export function utf8String(value: string): Uint8Array {
  return tlv(0x0c, text(value));
}

/** OCTET STRING. */
export function octetString(bytes: Uint8Array): Uint8Array {
  return tlv(0x04, bytes);
}

/** BIT STRING with no unused bits. */
export function bitString(bytes: Uint8Array): Uint8Array {
  return tlv(0x03, concat(Uint8Array.of(0), bytes));
}

/** BOOLEAN. */
export function boolean(value: boolean): Uint8Array {
  return tlv(0x01, Uint8Array.of(value ? 0xff : 0));
}

/** UTCTime before 2050, GeneralizedTime from then on (RFC 5280 4.1.2.5). */
export function time(date: Date): Uint8Array {
  const iso = date.toISOString(); // 2026-01-02T03:04:05.678Z
  const digits = iso.slice(0, 19).replace(/[-T:]/g, "") + "Z";
  const year = date.getUTCFullYear();
  return year < 2050 ? tlv(0x17, text(digits.slice(2))) : tlv(0x18, text(digits));
}

/** `[n]` EXPLICIT: a constructed context-specific wrapper around encoded values. */
export function explicit(n: number, ...items: Uint8Array[]): Uint8Array {
  return tlv(0xa0 | n, concat(...items));
}

/** `[n]` IMPLICIT on a primitive value: context-specific tag, raw contents. */
export function implicitPrimitive(n: number, contents: Uint8Array): Uint8Array {
  return tlv(0x80 | n, contents);
}
