/**
 * Folder-local helpers to read untyped YAML with errors that name the file and the field.
 * @module
 */
import { KubeConfigError } from "../errors.ts";

/** A value inside a parsed YAML document, with its dotted field path for error messages. */
export class Fields {
  readonly value: unknown;
  /** e.g. `users[0].user`; empty at the root. */
  readonly field: string;
  /** The file the document came from. */
  readonly path: string;

  constructor(value: unknown, field: string, path: string) {
    this.value = value;
    this.field = field;
    this.path = path;
  }

  /** The dotted path of `key` under this value. */
  at(key: string): string {
    return this.field ? `${this.field}.${key}` : key;
  }

  /** An error about `key` under this value (or this value itself when `key` is empty). */
  error(key: string, message: string, cause?: unknown): KubeConfigError {
    const field = key ? this.at(key) : this.field || "the document";
    return new KubeConfigError(message, { path: this.path, field, cause });
  }

  requireObject(): void {
    if (this.value === undefined || this.value === null) {
      throw this.error("", "is missing; add it");
    }
    if (typeof this.value !== "object" || Array.isArray(this.value)) {
      throw this.error("", "must be a mapping of keys to values");
    }
  }

  has(key: string): boolean {
    return this.#raw(key) !== undefined && this.#raw(key) !== null;
  }

  child(key: string): Fields {
    return new Fields(this.#raw(key), this.at(key), this.path);
  }

  string(key: string): string | undefined {
    const v = this.#raw(key);
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "string") {
      throw this.error(key, `must be a string, not ${typeof v}; put it in quotes`);
    }
    return v;
  }

  requiredString(key: string): string {
    const v = this.string(key);
    if (v === undefined || v === "") throw this.error(key, "is missing or empty; set it");
    return v;
  }

  asString(): string {
    if (typeof this.value !== "string") throw this.error("", "must be a string; put it in quotes");
    return this.value;
  }

  boolean(key: string): boolean | undefined {
    const v = this.#raw(key);
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "boolean") throw this.error(key, "must be true or false");
    return v;
  }

  list(key: string): Fields[] {
    const v = this.#raw(key);
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v)) throw this.error(key, "must be a list");
    return v.map((item, i) => new Fields(item, `${this.at(key)}[${i}]`, this.path));
  }

  #raw(key: string): unknown {
    if (this.value === null || typeof this.value !== "object") return undefined;
    return (this.value as Record<string, unknown>)[key];
  }
}

/** Decodes a base64 `*-data` field that must hold PEM text. */
export function decodePemData(data: string, fields: Fields, key: string): string {
  let text: string;
  try {
    const binary = atob(data.replace(/\s+/g, ""));
    text = new TextDecoder("utf-8", { fatal: true }).decode(
      Uint8Array.from(binary, (c) => c.charCodeAt(0)),
    );
  } catch (err) {
    throw fields.error(
      key,
      "is not valid base64; it must hold the base64 of a PEM file (e.g. the output of " +
        "`base64 -w0 file.pem`)",
      err,
    );
  }
  if (!text.includes("-----BEGIN ")) {
    throw fields.error(
      key,
      "does not decode to PEM (no -----BEGIN line); it must hold the base64 of a PEM file",
    );
  }
  return text;
}
