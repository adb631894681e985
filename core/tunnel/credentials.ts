/**
 * Per-pod tunnel credentials: `vkt1.<pod uid>.<32 random bytes, base64url>`. vkubelet keeps
 * only the SHA-256 of each (a provider may store it in the pod's state and {@link
 * TunnelCredentials.restore} it after a restart), compares in constant time, and forgets it on
 * revoke. A credential names its pod, so it can only ever open that pod's tunnel. A pod may hold
 * several (one kept from before a restart and one issued after it, for its next runs).
 *
 * A node's gateway (./gateway.ts) has credentials of its own kind, `vkg1.gateway.<secret>`, kept
 * by another instance ({@link GATEWAY_PREFIX}): neither kind opens what the other does.
 * @module
 */
import { timingSafeEqual } from "node:crypto";

/** Pods' credentials. */
export const POD_PREFIX = "vkt1";
/** Gateways' credentials. */
export const GATEWAY_PREFIX = "vkg1";

/** Issues, checks and revokes credentials; see the module doc. */
export class TunnelCredentials {
  readonly #hashes = new Map<string, Uint8Array[]>();
  readonly #prefix: string;

  /** `prefix`: the kind of credential this instance issues and accepts (default a pod's). */
  constructor(prefix: string = POD_PREFIX) {
    this.#prefix = prefix;
  }

  /**
   * A new credential for pod `uid` and the hash to keep: it replaces any earlier one, or with
   * `keep` is accepted beside them.
   */
  async issue(uid: string, keep = false): Promise<{ credential: string; hash: string }> {
    if (!uid || uid.includes(".")) throw new TypeError(`Pod uid ${uid} cannot name a credential`);
    const secret = new Uint8Array(32);
    crypto.getRandomValues(secret);
    const credential = `${this.#prefix}.${uid}.${base64url(secret)}`;
    const hash = await sha256(credential);
    this.#hashes.set(uid, [...(keep ? this.#hashes.get(uid) ?? [] : []), hash]);
    return { credential, hash: hex(hash) };
  }

  /** Accepts the credentials of pod `uid` whose hashes were kept elsewhere (hex SHA-256). */
  restore(uid: string, ...hashes: string[]): void {
    const good = hashes.filter((h) => /^[0-9a-f]{64}$/.test(h));
    if (good.length === 0) return;
    this.#hashes.set(
      uid,
      good.map((h) => Uint8Array.from(h.match(/../g)!, (x) => parseInt(x, 16))),
    );
  }

  /** The hashes pod `uid`'s credentials have now (hex), to keep across a restart. */
  hashes(uid: string): string[] {
    return (this.#hashes.get(uid) ?? []).map(hex);
  }

  /** Forgets pod `uid`'s credential: it opens nothing from now on. */
  revoke(uid: string): void {
    this.#hashes.delete(uid);
  }

  /** The pod uid `credential` was issued for, or why it is refused. */
  async verify(credential: string): Promise<{ uid: string } | { refused: string }> {
    const [prefix, uid, secret, extra] = credential.split(".");
    if (prefix !== this.#prefix || !uid || !secret || extra !== undefined) {
      return {
        refused: `the credential is not one vkubelet issues here (${this.#prefix}.<id>.<secret>)`,
      };
    }
    const who = this.#prefix === POD_PREFIX ? `pod uid ${uid}` : uid;
    const kept = this.#hashes.get(uid);
    if (!kept) {
      return { refused: `no credential is issued for ${who} (revoked or unknown)` };
    }
    const given = await sha256(credential);
    if (!kept.some((hash) => timingSafeEqual(given, hash))) {
      return { refused: `the credential for ${who} does not match the one issued` };
    }
    return { uid };
  }
}

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_")
    .replace(/=+$/, "");
}
