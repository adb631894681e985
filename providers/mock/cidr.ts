/**
 * Pod IPs for the mock provider, handed out from a loopback CIDR (127.0.0.0/8 only, so nothing
 * a test does with a mock pod's address can leave the machine).
 * @module
 */

/** A parsed IPv4 CIDR: first address as a number, and how many addresses it holds. */
export interface Cidr {
  base: number;
  size: number;
  text: string;
}

/** Parses an IPv4 CIDR inside 127.0.0.0/8; returns an error message otherwise. */
export function parseLoopbackCidr(text: string): Cidr | string {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(text.trim());
  const octets = match?.slice(1, 5).map(Number) ?? [];
  const prefix = Number(match?.[5]);
  if (!match || octets.some((o) => o > 255) || prefix > 32) {
    return `${JSON.stringify(text)} is not an IPv4 CIDR such as 127.80.0.0/16`;
  }
  if (octets[0] !== 127 || prefix < 8) {
    return `${text} is not inside the loopback range 127.0.0.0/8; mock pod IPs must be loopback addresses (e.g. 127.80.0.0/16)`;
  }
  if (prefix > 30) return `${text} is too small for pods; use a prefix of /30 or shorter`;
  const size = 2 ** (32 - prefix);
  const address = octets.reduce((n, o) => n * 256 + o, 0);
  return { base: address - (address % size), size, text };
}

/** Formats a numeric IPv4 address. */
export function formatIpv4(address: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(address / 2 ** shift) % 256).join(".");
}

/** What {@link IpPool.allocate} prefers, so that a pod keeps its address across restarts. */
export interface IpHint {
  /** The pod's UID: its address is derived from it (the same UID, the same address). */
  uid?: string;
  /** The address the pod had before (its written `status.podIP`), taken back when free. */
  previous?: string;
}

/**
 * Hands out the addresses of a CIDR, skipping its first and last, and takes them back. With a
 * hint, a pod gets its previous address or one derived from its UID (the next free one on a
 * collision), so a restarted vkubelet gives its pods the addresses they had, as a kubelet
 * restart leaves pod IPs alone.
 */
export class IpPool {
  #cidr: Cidr;
  #used = new Set<number>();
  #next = 1;

  constructor(cidr: Cidr) {
    this.#cidr = cidr;
  }

  /** How many addresses are handed out. */
  get inUse(): number {
    return this.#used.size;
  }

  /** A free address; throws a RangeError when the CIDR is full. */
  allocate(hint: IpHint = {}): string {
    const usable = this.#cidr.size - 2;
    const previous = hint.previous === undefined ? undefined : this.#offset(hint.previous);
    if (
      previous !== undefined && previous >= 1 && previous <= usable && !this.#used.has(previous)
    ) {
      return this.#take(previous);
    }
    let offset = hint.uid ? (fnv1a(hint.uid) % usable) + 1 : this.#next;
    for (let tries = 0; tries < usable; tries++) {
      const candidate = offset;
      offset = offset >= usable ? 1 : offset + 1;
      if (!hint.uid) this.#next = offset;
      if (!this.#used.has(candidate)) return this.#take(candidate);
    }
    throw new RangeError(`pod CIDR ${this.#cidr.text} has no free address left`);
  }

  /** Takes `ip` if it is a usable address of the CIDR and free; false otherwise. */
  claim(ip: string): boolean {
    const octets = ip.split(".").map(Number);
    if (octets.length !== 4 || octets.some((o) => !Number.isInteger(o) || o < 0 || o > 255)) {
      return false;
    }
    const offset = octets.reduce((n, o) => n * 256 + o, 0) - this.#cidr.base;
    if (offset < 1 || offset > this.#cidr.size - 2 || this.#used.has(offset)) return false;
    this.#used.add(offset);
    return true;
  }

  /** Returns an address to the pool; unknown addresses are ignored. */
  release(ip: string): void {
    const offset = this.#offset(ip);
    if (offset !== undefined) this.#used.delete(offset);
  }

  #take(offset: number): string {
    this.#used.add(offset);
    return formatIpv4(this.#cidr.base + offset);
  }

  /** The offset of `ip` in the CIDR, or undefined when it is not an address inside it. */
  #offset(ip: string): number | undefined {
    const octets = ip.split(".").map(Number);
    if (octets.length !== 4 || octets.some((o) => !(o >= 0 && o <= 255))) return undefined;
    const offset = octets.reduce((n, o) => n * 256 + o, 0) - this.#cidr.base;
    return offset >= 0 && offset < this.#cidr.size ? offset : undefined;
  }
}

/** 32-bit FNV-1a of a string's UTF-16 code units: cheap, stable, well spread for UUIDs. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}
