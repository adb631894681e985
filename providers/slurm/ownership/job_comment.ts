/**
 * The job comment that names a job's pod: how a restarted vkubelet finds its jobs. Anyone who
 * submits a job writes its comment, so a comment is parsed strictly — a node and a pod name that
 * are DNS-1123 names, a namespace that is a DNS-1123 label, a UUID — and is vkubelet's only when
 * it carries an HMAC-SHA256 of those fields under a key only vkubelet holds (`./comment_key.ts`),
 * truncated to 128 bits and written base64url:
 *
 *     vkubelet node=<node> pod=<namespace>/<name> uid=<uid> run=<n> mac=<22 characters>
 *
 * At most 36 + 253 + 63 + 253 + 36 + 9 + 22 = 672 characters, within the 1024 slurmctld allows a
 * comment. A comment of an older vkubelet (no `mac=`) parses, and is reported as unsigned.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { encodePodTag, isDnsSubdomain, type PodTag, podTagText } from "../../../provider/mod.ts";

export { isDnsSubdomain };

/** The pod and run a job comment names: the kit's pod tag (provider/pod_tags.ts). */
export type JobIdentity = PodTag;

/** A DNS-1123 label: a namespace (kubernetes apimachinery validation IsDNS1123Label). */
export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const MAC = /^[A-Za-z0-9_-]{22}$/;

/** The comment's text before its MAC: what the MAC covers (the kit's text carrier). */
export function jobComment(node: string, pod: Pod, run: number): string {
  return podTagText.write(encodePodTag(node, pod, run));
}

/** A comment as parsed: the identity, its text without the MAC, and the MAC if any. */
export interface ParsedComment {
  id: JobIdentity;
  text: string;
  mac?: string;
}

/**
 * The comment's fields, when every one is what vkubelet writes (see the module doc; the kit's
 * {@link podTagText} decodes the text strictly); undefined otherwise. Does not authenticate:
 * see {@link JobCommentKey.check}.
 */
export function parseJobComment(comment: string): ParsedComment | undefined {
  const at = comment.lastIndexOf(" mac=");
  const [text, mac] = at < 0 ? [comment] : [comment.slice(0, at), comment.slice(at + 5)];
  const id = podTagText.read(text);
  if (!id || (mac !== undefined && !MAC.test(mac))) return undefined;
  return { id, text, ...(mac ? { mac } : {}) };
}

/** What {@link JobCommentKey.check} makes of a comment. */
export type CommentCheck =
  /** vkubelet's own comment. */
  | { kind: "signed"; id: JobIdentity }
  /** Not a comment vkubelet writes (another program's, or forged with a bad name or path). */
  | { kind: "malformed" }
  /** vkubelet's form without a MAC: an older vkubelet's, or forged. */
  | { kind: "unsigned"; id: JobIdentity }
  /** vkubelet's form with a MAC that does not verify: forged, or signed under another key. */
  | { kind: "forged"; id: JobIdentity };

/** The key that signs and checks job comments. */
export class JobCommentKey {
  readonly #key: CryptoKey;

  private constructor(key: CryptoKey) {
    this.#key = key;
  }

  /** A key from its secret bytes (`./comment_key.ts` keeps them). */
  static async fromBytes(secret: Uint8Array): Promise<JobCommentKey> {
    const key = await crypto.subtle.importKey(
      "raw",
      secret as Uint8Array<ArrayBuffer>,
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    );
    return new JobCommentKey(key);
  }

  /** A key of this process alone: jobs it signs are adopted by no restarted vkubelet. */
  static async random(): Promise<JobCommentKey> {
    return await JobCommentKey.fromBytes(crypto.getRandomValues(new Uint8Array(32)));
  }

  /** The comment `text` (from {@link jobComment}) with its MAC. */
  async sign(text: string): Promise<string> {
    return `${text} mac=${await this.#mac(text)}`;
  }

  /** Parses and authenticates `comment`. */
  async check(comment: string): Promise<CommentCheck> {
    const parsed = parseJobComment(comment);
    if (!parsed) return { kind: "malformed" };
    if (parsed.mac === undefined) return { kind: "unsigned", id: parsed.id };
    return { kind: await this.verify(parsed) ? "signed" : "forged", id: parsed.id };
  }

  /** True when the parsed comment carries this key's MAC of its text. */
  async verify(parsed: ParsedComment): Promise<boolean> {
    return parsed.mac !== undefined && sameText(parsed.mac, await this.#mac(parsed.text));
  }

  async #mac(text: string): Promise<string> {
    // A fixed prefix, so that the MAC of a comment is no MAC of anything else vkubelet may sign.
    const data = new TextEncoder().encode(`vkubelet slurm job comment v1\n${text}`);
    const mac = new Uint8Array(await crypto.subtle.sign("HMAC", this.#key, data));
    return base64url(mac.subarray(0, 16));
  }
}

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_")
    .replace(/=+$/, "");
}

/** Compares without stopping at the first difference. */
function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
