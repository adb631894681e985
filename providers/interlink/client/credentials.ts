/**
 * The files the interlink provider authenticates with, each re-read when it changes (a sidecar
 * refreshes OIDC tokens; cert-manager renews certificates): the bearer token (`tokenFile`), the
 * extra CA (`caFile`) and the client certificate and key for mutual TLS (`certFile`, `keyFile`, as
 * interLink's virtual kubelet's `TLS.CertFile`/`KeyFile`). A file that cannot be read mid-rotation
 * leaves the last good copy in use; one never read fails the call, naming the key and the file.
 * @module
 */
import { InvalidInputError, type Logger, TransientError } from "../../../provider/mod.ts";
import type { InterlinkConfig } from "../config.ts";

/** What {@link CredentialFiles} needs. */
export interface CredentialFilesDeps {
  log: Logger;
  /** Reads a file; Deno.readTextFile unless a test gives one. */
  readFile?: (path: string) => Promise<string>;
  /** The file's change marker; mtime, size and inode by default. */
  fileVersion?: (path: string) => Promise<string>;
  /** Told each token read, to keep it out of messages. */
  secret: (value: string) => void;
}

/** TLS options for `https.request`: the CA, and the client certificate and key when set. */
export interface TlsFiles {
  ca?: string;
  cert?: string;
  key?: string;
}

/** The provider's credential files; see the module doc. */
export class CredentialFiles {
  readonly #config: InterlinkConfig;
  readonly #deps: CredentialFilesDeps;
  readonly #read = new Map<string, { version: string; text: string }>();

  constructor(config: InterlinkConfig, deps: CredentialFilesDeps) {
    this.#config = config;
    this.#deps = deps;
  }

  /** The bearer token; `undefined` without a tokenFile. */
  async token(): Promise<string | undefined> {
    const path = this.#config.tokenFile;
    if (!path) return undefined;
    const token = (await this.#file(
      "tokenFile",
      path,
      "check the path and that the token sidecar has written it",
      TransientError,
    )).trim();
    if (token.length >= 4) this.#deps.secret(token);
    return token;
  }

  /** The CA and the client certificate and key, for an https url. */
  async tls(): Promise<TlsFiles> {
    const { caFile, certFile, keyFile } = this.#config;
    const fix = "check the path and its permissions";
    return {
      ...(caFile ? { ca: await this.#file("caFile", caFile, fix, InvalidInputError) } : {}),
      ...(certFile && keyFile
        ? {
          cert: await this.#file("certFile", certFile, fix, InvalidInputError),
          key: await this.#file("keyFile", keyFile, fix, InvalidInputError),
        }
        : {}),
    };
  }

  /** The file's text, read again when its version changed. */
  async #file(
    key: string,
    path: string,
    fix: string,
    error: new (message: string) => Error,
  ): Promise<string> {
    const last = this.#read.get(path);
    try {
      const version = await (this.#deps.fileVersion ?? fileVersion)(path);
      if (last?.version === version) return last.text;
      const text = await (this.#deps.readFile ?? Deno.readTextFile)(path);
      this.#read.set(path, { version, text });
      this.#deps.log.debug("{key} read from {file}", { key, file: path });
      return text;
    } catch (err) {
      if (last) return last.text; // mid-rotation: the last one read
      throw new error(`${key} ${path} cannot be read (${(err as Error).message}); ${fix}`);
    }
  }
}

async function fileVersion(path: string): Promise<string> {
  const info = await Deno.stat(path);
  return `${info.mtime?.getTime()}:${info.size}:${info.ino}`;
}
