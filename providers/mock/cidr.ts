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

/** Hands out the addresses of a CIDR, skipping its first and last, and takes them back. */
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
  allocate(): string {
    const usable = this.#cidr.size - 2;
    for (let tries = 0; tries < usable; tries++) {
      const offset = this.#next;
      this.#next = offset >= usable ? 1 : offset + 1;
      if (!this.#used.has(offset)) {
        this.#used.add(offset);
        return formatIpv4(this.#cidr.base + offset);
      }
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
    const octets = ip.split(".").map(Number);
    this.#used.delete(octets.reduce((n, o) => n * 256 + o, 0) - this.#cidr.base);
  }
}
