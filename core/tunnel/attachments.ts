/**
 * Where a node's tunnel attachments are kept across restarts: one `<uid>.json` per pod in a
 * directory of the node's (made 0700; each file 0600, written whole): the pod's IPs, network
 * namespace, declared ports, its credentials' SHA-256 (never a credential) and whether it is
 * attached through the gateway. The gateway's own file (`_gateway.json`, ./gateway.ts) is named
 * so that it is never taken for a pod's.
 * @module
 */
import { join } from "node:path";
import { writeAtomically } from "../../x509/mod.ts";

/** What a tunnel network's setUp gave a pod. */
export interface SavedNetwork {
  ips: string[];
  netns: string;
}

/** One attachment as kept (`<uid>.json`). */
export interface SavedAttachment extends SavedNetwork {
  version: 1;
  uid: string;
  namespace: string;
  name: string;
  /** The TCP ports listened on. */
  ports: number[];
  /** SHA-256 (hex) of each credential the pod's agents may hold; never a credential. */
  credentialHashes: string[];
  /** Attached through the gateway (no credential of its own). */
  gateway?: true;
}

/**
 * A kept attachment that is not one (`name` is in the kit's `POD_NETWORK_LOST_ERRORS`): the pod's
 * attachment cannot be had again, only made anew.
 */
export class AttachmentStateError extends Error {
  override name = "AttachmentStateError";
}

/** The kept attachments of one node; without a directory it keeps nothing. */
export class AttachmentStore {
  constructor(private readonly dir?: string) {}

  /** Keeps `saved` (0600, replaced whole). */
  async save(saved: SavedAttachment): Promise<void> {
    if (!this.dir || !isUid(saved.uid)) return;
    await Deno.mkdir(this.dir, { recursive: true, mode: 0o700 });
    await writeAtomically(join(this.dir, `${saved.uid}.json`), `${JSON.stringify(saved)}\n`);
  }

  /** The kept attachment of pod `uid`, if any; a file that is not one is an error. */
  async load(uid: string): Promise<SavedAttachment | undefined> {
    if (!this.dir || !isUid(uid)) return undefined;
    const path = join(this.dir, `${uid}.json`);
    let text: string;
    try {
      text = await Deno.readTextFile(path);
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return undefined;
      throw err;
    }
    let saved: SavedAttachment | undefined;
    try {
      saved = JSON.parse(text) as SavedAttachment;
    } catch {
      // not JSON: told below as any other file that is not an attachment
    }
    if (
      saved?.version !== 1 || saved.uid !== uid || !Array.isArray(saved.ips) ||
      !saved.ips.length || typeof saved.netns !== "string" ||
      !Array.isArray(saved.credentialHashes)
    ) {
      throw new AttachmentStateError(
        `${path} is not a tunnel attachment vkubelet keeps (version 1, uid, ips, netns, ` +
          `credentialHashes); remove it and delete the pod to attach it anew`,
      );
    }
    return saved;
  }

  /** Removes pod `uid`'s kept attachment (nothing when there is none). */
  async remove(uid: string): Promise<void> {
    if (this.dir && isUid(uid)) await Deno.remove(join(this.dir, `${uid}.json`)).catch(() => {});
  }

  /** The uids of the kept attachments. */
  async uids(): Promise<string[]> {
    const uids: string[] = [];
    if (!this.dir) return uids;
    try {
      for await (const e of Deno.readDir(this.dir)) {
        const uid = e.isFile && e.name.endsWith(".json") ? e.name.slice(0, -5) : "";
        if (isUid(uid)) uids.push(uid);
      }
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
    return uids;
  }
}

/** A uid that names a file of the directory and nothing else (`_gateway` is none). */
function isUid(uid: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9_-]*$/.test(uid);
}
