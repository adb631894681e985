/**
 * Whether a URL is safe to send a credential to (a password, a bearer token): https, or plain
 * http to this machine only (127.0.0.0/8, ::1, localhost), where the traffic never leaves it.
 * The parsed URL decides, so `HTTP://` is http and `http://127.1` is 127.0.0.1.
 * @module
 */

/** Whether the URL parser's `hostname` names this machine: 127.0.0.0/8, ::1 or localhost. */
function isLoopback(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" ||
    /^127(\.\d{1,3}){3}$/.test(hostname);
}

/**
 * Why a credential sent to `url` could be read on the way, or undefined when it cannot: https,
 * or http to 127.0.0.0/8, ::1 or localhost. The reason reads after "is", e.g. "plain http to
 * 10.0.0.1:5000, which is not this machine".
 *
 * @example Usage
 * ```ts
 * import { credentialUrlProblem } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * assert.equal(credentialUrlProblem("https://keystone.example/v3"), undefined);
 * assert.equal(credentialUrlProblem("http://127.0.0.1:5000/v3"), undefined);
 * assert.equal(
 *   credentialUrlProblem("HTTP://10.0.0.1:5000/v3"),
 *   "plain http to 10.0.0.1:5000, which is not this machine",
 * );
 * ```
 */
export function credentialUrlProblem(url: string | URL): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `not a URL (${JSON.stringify(String(url))})`;
  }
  if (parsed.protocol === "https:") return undefined;
  if (parsed.protocol !== "http:") return `not an http:// or https:// URL (${parsed.protocol})`;
  if (isLoopback(parsed.hostname)) return undefined;
  return `plain http to ${parsed.host}, which is not this machine`;
}
