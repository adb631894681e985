/**
 * The one rule for a remote provider's `ping`: when it fails, say what could not be reached (the
 * endpoint or service) and why (the underlying error), with credentials taken out, as a
 * {@link BackendUnreachableError}. The message becomes the node's `ProviderReachable` condition,
 * its event and its log line, which anyone who can read Nodes sees.
 * @module
 */
import { BackendUnreachableError, isBackendUnreachable } from "./errors.ts";

/** Options for {@link backendUnreachable}. */
export interface BackendUnreachableHelpOptions {
  /** What to check or change, appended to the message (e.g. "check that interLink runs"). */
  hint?: string;
  /** The condition's reason; default `BackendUnreachable`. */
  reason?: string;
  /** Secrets to take out of the message besides those {@link redactCredentials} finds. */
  secrets?: readonly string[];
}

/**
 * `err` as a {@link BackendUnreachableError} naming `endpoint`: "cannot reach <endpoint>:
 * <err's message>[; <hint>]" (just the message when it names the endpoint already), credentials
 * redacted. An error that is one already is returned as it is.
 *
 * @example Usage
 * ```ts
 * import { backendUnreachable } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * const err = backendUnreachable("https://user:pw@api.example/v1", new Error("connection refused"));
 * assert.equal(err.message, "cannot reach https://<redacted>@api.example/v1: connection refused");
 * ```
 */
export function backendUnreachable(
  endpoint: string,
  err: unknown,
  options: BackendUnreachableHelpOptions = {},
): BackendUnreachableError {
  if (isBackendUnreachable(err)) return err;
  const secrets = options.secrets ?? [];
  const where = redactCredentials(endpoint, secrets);
  const why = redactCredentials(describe(err), secrets);
  // An error that names the endpoint already says what could not be reached: said once.
  const message = (why.includes(where) ? why : `cannot reach ${where}: ${why || "no answer"}`) +
    (options.hint ? `; ${options.hint}` : "");
  return new BackendUnreachableError(message, {
    endpoint: where,
    reason: options.reason,
    cause: err,
  });
}

/** The error's message and, when they add to it, its causes' ("fetch failed" says little alone). */
function describe(err: unknown): string {
  let text = err instanceof Error ? err.message : String(err);
  let cause = err instanceof Error ? err.cause : undefined;
  for (let depth = 0; depth < 3 && cause instanceof Error; depth++) {
    if (cause.message && !text.includes(cause.message)) text += `: ${cause.message}`;
    cause = cause.cause;
  }
  return text;
}

/**
 * `text` without credentials: URL user-info, `Bearer`/`Basic` tokens, `password=`, `token=`,
 * `secret=`, `signature=` and `key=` values (query strings and key=value logs), and each of
 * `secrets`.
 *
 * @example Usage
 * ```ts
 * import { redactCredentials } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * assert.equal(
 *   redactCredentials("GET https://a:b@h/x?token=abc&n=1"),
 *   "GET https://<redacted>@h/x?token=<redacted>&n=1",
 * );
 * ```
 */
export function redactCredentials(text: string, secrets: readonly string[] = []): string {
  let out = text
    .replace(/([a-z][a-z0-9+.-]*:\/\/)[^/\s@]+@/gi, "$1<redacted>@")
    .replace(/\b(Bearer|Basic)\s+[^\s"',;]+/gi, "$1 <redacted>")
    .replace(
      /\b([\w-]*(?:password|passwd|token|secret|signature|apikey|api-key|access-key|key))(=|:\s*)[^\s&"',;)]+/gi,
      "$1$2<redacted>",
    );
  for (const secret of secrets) if (secret) out = out.replaceAll(secret, "<redacted>");
  return out;
}
