/**
 * Where a certificate issued through a CSR is kept between runs (`--cert-dir`): one PEM file per
 * node and kind, `<cert-dir>/<node>-server-current.pem` for the serving certificate and
 * `<cert-dir>/<node>-client-current.pem` for the node's client certificate, each holding the
 * certificate chain and then the private key, as the kubelet keeps `kubelet-server-current.pem`
 * and `kubelet-client-current.pem` (client-go util/certificate certificate_store.go). The node name is in the file name because several
 * virtual nodes often share one host. The file is written with mode 0600 to a temporary name
 * in the same directory and renamed over the old one, so a crash never leaves half a key; the
 * directory is created with mode 0700.
 * @module
 */
import type { KeyPair } from "./certificate_source.ts";

/** Keeps one key pair across restarts. */
export interface CertificateStore {
  /** The file, for log messages. */
  readonly path: string;
  /** The stored pair; undefined when there is none yet. */
  load(): Promise<KeyPair | undefined>;
  /** Replaces the stored pair atomically. */
  save(pair: KeyPair): Promise<void>;
}

/** The default directories, best first: systemd's `$STATE_DIRECTORY`, then `/var/lib`, then home. */
export function defaultCertDirs(env: Record<string, string | undefined>): string[] {
  const dirs: string[] = [];
  const systemd = env.STATE_DIRECTORY?.split(":")[0];
  if (systemd) dirs.push(`${systemd}/pki`);
  dirs.push("/var/lib/vkubelet/pki");
  const state = env.XDG_STATE_HOME || (env.HOME ? `${env.HOME}/.local/state` : undefined);
  if (state) dirs.push(`${state}/vkubelet/pki`);
  return dirs;
}

/** Options for {@link fileCertificateStore}. */
export interface FileCertificateStoreOptions {
  /**
   * Candidate directories, best first: the first that holds the node's file is read, the first
   * that can be written is written (an unprivileged user cannot create `/var/lib/vkubelet`).
   */
  dirs: string[];
  nodeName: string;
  /** Which certificate: `server` (the default) or `client`. */
  kind?: "server" | "client";
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n[\s\S]*?-----END \1-----\r?\n?/g;

/** A {@link CertificateStore} in a directory; see the module doc. */
export function fileCertificateStore(options: FileCertificateStoreOptions): CertificateStore {
  if (options.dirs.length === 0) throw new TypeError("fileCertificateStore needs a directory");
  const fileIn = (dir: string) =>
    `${dir.replace(/\/+$/, "")}/${options.nodeName}-${options.kind ?? "server"}-current.pem`;
  let path = fileIn(options.dirs[0]);
  return {
    get path() {
      return path;
    },
    async load() {
      for (const dir of options.dirs) {
        let text: string;
        try {
          text = await Deno.readTextFile(fileIn(dir));
        } catch (err) {
          if (isMissingOrDenied(err)) continue;
          throw err;
        }
        path = fileIn(dir);
        return splitPem(text, path);
      }
      return undefined;
    },
    async save(pair) {
      const text = `${pair.certPem.trimEnd()}\n${pair.keyPem.trimEnd()}\n`;
      for (const [i, dir] of options.dirs.entries()) {
        try {
          await writeAtomically(fileIn(dir), text);
          path = fileIn(dir);
          return;
        } catch (err) {
          if (i === options.dirs.length - 1 || !isMissingOrDenied(err)) throw err;
        }
      }
    },
  };
}

/** The certificate blocks (in order) and the private key of a stored file. */
function splitPem(text: string, path: string): KeyPair {
  const certs: string[] = [];
  let keyPem: string | undefined;
  for (const match of text.matchAll(PEM_BLOCK)) {
    const block = match[0].endsWith("\n") ? match[0] : `${match[0]}\n`;
    if (match[1] === "CERTIFICATE") certs.push(block);
    else if (match[1].endsWith("PRIVATE KEY")) keyPem = block;
  }
  if (certs.length === 0 || !keyPem) {
    throw new TypeError(`${path} does not hold a PEM certificate followed by its private key`);
  }
  return { certPem: certs.join(""), keyPem };
}

/** Writes `text` to `path` with mode 0600 through a temporary file and a rename. */
export async function writeAtomically(path: string, text: string): Promise<void> {
  const dir = path.slice(0, path.lastIndexOf("/")) || "/";
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const temporary = `${path}.tmp-${crypto.randomUUID().slice(0, 8)}`;
  // Created 0600 from the first byte: the key is never readable by others, not even briefly.
  const file = await Deno.open(temporary, { write: true, createNew: true, mode: 0o600 });
  try {
    const bytes = new TextEncoder().encode(text);
    for (let written = 0; written < bytes.length;) {
      written += await file.write(bytes.subarray(written));
    }
    await file.syncData();
  } finally {
    file.close();
  }
  try {
    await Deno.chmod(temporary, 0o600); // in case the umask or an old file got in the way
    await Deno.rename(temporary, path);
  } catch (err) {
    await Deno.remove(temporary).catch(() => {});
    throw err;
  }
}

function isMissingOrDenied(err: unknown): boolean {
  return err instanceof Deno.errors.NotFound || err instanceof Deno.errors.PermissionDenied ||
    err instanceof Deno.errors.NotCapable || err instanceof Deno.errors.NotADirectory;
}
