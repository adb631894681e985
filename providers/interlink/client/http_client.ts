/**
 * HTTP to interLink's API server or a plugin. interLink sends JSON bodies on GET (`/status`,
 * `/getLogs`), which `fetch` refuses, so this speaks through `node:http`/`node:https`: a URL, or a
 * unix socket (interLink's `unix://` InterlinkURL), with an extra CA for https. The bearer token
 * is read from its file before each call and re-read whenever the file changes (interLink
 * deployments refresh OIDC tokens with a sidecar); it is never logged. Request and response
 * bodies are bounded. Failures come back as the kit's errors: no answer, a timeout, 5xx and 429
 * as {@link TransientError}; other 4xx as {@link InterlinkHttpError}.
 *
 * The calls match interLink's virtual kubelet (interlink-hq/interLink, commit
 * f632175701d78b604138ce2e1e38af13d1f7546b, pkg/virtualkubelet/execute.go `doRequestWithClient`,
 * `PingInterLink`, `createTLSHTTPClient`) and its API server's handlers (pkg/interlink/api/).
 * @module
 */
import http from "node:http";
import https from "node:https";
import { Buffer } from "node:buffer";
import { InvalidInputError, type Logger, TransientError } from "../../../provider/mod.ts";
import type { InterlinkConfig } from "../config.ts";
import { CredentialFiles } from "./credentials.ts";

/** A non-2xx answer that retrying will not fix (a 4xx other than 408 and 429). */
export class InterlinkHttpError extends Error {
  override name = "InterlinkHttpError";
  /** The HTTP status. */
  readonly status: number;
  /** The answer's status and the start of its body. */
  constructor(message: string, status: number) {
    super(message);
    this.status = status;
  }
}

/** True when the server answered (with an error status), as opposed to not answering at all. */
export function answered(err: unknown): boolean {
  return err instanceof InterlinkHttpError ||
    (err instanceof Error && err.cause instanceof InterlinkHttpError);
}

/**
 * True when a call timed out after it was sent: the server may have carried it out (a create
 * whose job appears later), unlike a call that found no server.
 */
export function timedOut(err: unknown): boolean {
  return err instanceof Error && err.cause instanceof DOMException &&
    err.cause.name === "TimeoutError";
}

/** One call: method, path, JSON body. */
export interface CallInput {
  /** GET, POST or DELETE. */
  method: string;
  /** `/create`, `/status`... */
  path: string;
  /** Sent as JSON; `undefined` sends no body. */
  body?: unknown;
  /** What the call is for, in errors: "create of pod ns/name". */
  what: string;
}

/** Options for one call. */
export interface CallOptions {
  /** Aborts the call. */
  signal?: AbortSignal;
  /** Default the config's `requestTimeout`; 0 for none (a followed log). */
  timeoutMs?: number;
  /** The config key that sets `timeoutMs`, named in a timeout's error; `requestTimeout`. */
  timeoutKey?: string;
}

/** What {@link InterlinkClient} needs. */
export interface InterlinkClientDeps {
  /** Logs calls (never the token). */
  log: Logger;
  /** The node's name, sent as `vkubelet-node` on each call. */
  nodeName: string;
  /** Reads a file; Deno.readTextFile unless a test gives one. */
  readFile?: (path: string) => Promise<string>;
  /** The file's change marker; mtime and size by default. */
  fileVersion?: (path: string) => Promise<string>;
}

/** Talks to one interLink API server or plugin; see the module doc. */
export class InterlinkClient {
  readonly #config: InterlinkConfig;
  readonly #deps: InterlinkClientDeps;
  readonly #agent: http.Agent;
  readonly #files: CredentialFiles;
  #session = 0;
  /** The url's password and the last tokens read, to keep out of messages. */
  readonly #secrets = new Set<string>();

  constructor(config: InterlinkConfig, deps: InterlinkClientDeps) {
    this.#config = config;
    this.#deps = deps;
    const password = config.url ? new URL(config.url).password : "";
    if (password) this.#secrets.add(decodeURIComponent(password));
    this.#files = new CredentialFiles(config, {
      ...deps,
      secret: (token) => {
        this.#secrets.add(token);
        // The url's password and the last tokens: a rotated-away token may still be echoed.
        if (this.#secrets.size > 8) this.#secrets.delete([...this.#secrets][password ? 1 : 0]);
      },
    });
    const secure = config.url?.startsWith("https:");
    // No keep-alive: Deno's node:http sends a request again when it is destroyed (our timeout)
    // on a reused connection, so a slow plugin would receive a second /create. One connection
    // a call costs little at a few calls a second.
    this.#agent = secure
      ? new https.Agent({ keepAlive: false, maxSockets: 16 })
      : new http.Agent({ keepAlive: false, maxSockets: 16 });
  }

  /** Where calls go, for messages: the URL or `unix:<path>`. */
  get endpoint(): string {
    // A user or password in the url is a credential too: never in a message.
    return this.#config.url?.replace(/^(https?:\/\/)[^@/]*@/, "$1") ??
      `unix:${this.#config.socket}`;
  }

  /**
   * `text` (an answer quoted in an error) without credentials: the bearer tokens read so far,
   * anything after `Bearer `, the url's password. A plugin may echo the request's headers.
   */
  redact(text: string): string {
    let out = text.replace(/(Bearer\s+)[^\s"',;]+/gi, "$1<redacted>");
    for (const secret of this.#secrets) out = out.replaceAll(secret, "<redacted>");
    return out;
  }

  /** Sends a call and reads the whole answer (bounded by `maxResponseBytes`) as text. */
  async call(input: CallInput, options: CallOptions = {}): Promise<string> {
    const deadline = this.#deadline(options);
    const response = await this.#open(input, deadline);
    // The deadline covers the body too: a plugin that sends headers and then stalls times out.
    const onAbort = () => response.destroy();
    deadline.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      return await readBounded(response, this.#config.maxResponseBytes, input.what, this.endpoint);
    } catch (err) {
      if (deadline.signal?.aborted) throw this.#aborted(input, deadline);
      throw err;
    } finally {
      deadline.signal?.removeEventListener("abort", onAbort);
    }
  }

  async #open(input: CallInput, deadline: Deadline): Promise<http.IncomingMessage> {
    const body = input.body === undefined ? undefined : Buffer.from(JSON.stringify(input.body));
    if (body && body.length > this.#config.maxRequestBytes) {
      throw new InvalidInputError(
        `the ${input.what} request is ${body.length} bytes, over maxRequestBytes (${this.#config.maxRequestBytes}); raise maxRequestBytes in the provider config or make the pod's ConfigMaps and Secrets smaller`,
      );
    }
    const headers: Record<string, string | number> = {
      "content-type": "application/json",
      "interlink-http-session": `vkubelet-${input.path.slice(1)}#${++this.#session}`,
      "vkubelet-node": this.#deps.nodeName,
    };
    if (body) headers["content-length"] = body.length;
    const token = await this.#files.token();
    if (token) headers["authorization"] = `Bearer ${token}`;
    const response = await this.#send(input, headers, body, deadline);
    const status = response.statusCode ?? 0;
    if (status >= 200 && status < 300) return response;
    const text = await readBounded(response, 4096, input.what, this.endpoint).catch(() => "");
    const said = `${this.endpoint} answered ${input.what} with HTTP ${status}: ${
      this.redact(text.trim().slice(0, 300)) || "(no body)"
    }`;
    if (status >= 500 || status === 429 || status === 408) {
      const after = Number(response.headers["retry-after"]);
      throw new TransientError(said, {
        retryAfterMs: Number.isFinite(after) && after > 0 ? after * 1000 : undefined,
        cause: new InterlinkHttpError(said, status),
      });
    }
    throw new InterlinkHttpError(said, status);
  }

  /** The call's signal: the caller's, and the timeout unless it is 0. */
  #deadline(options: CallOptions): Deadline {
    const timeoutMs = options.timeoutMs ?? this.#config.requestTimeout;
    const signals = [options.signal, timeoutMs > 0 ? AbortSignal.timeout(timeoutMs) : undefined]
      .filter((s): s is AbortSignal => s !== undefined);
    return {
      signal: signals.length ? AbortSignal.any(signals) : undefined,
      timeoutMs,
      timeoutKey: options.timeoutKey ?? "requestTimeout",
    };
  }

  /** Why an aborted call stopped: the timeout (retryable, naming endpoint, call and fix), or the caller's reason. */
  #aborted(input: CallInput, deadline: Deadline): unknown {
    const reason = deadline.signal?.reason;
    if (!(reason instanceof DOMException && reason.name === "TimeoutError")) return reason;
    return new TransientError(
      `${this.endpoint} does not answer ${input.method} ${input.path} (${input.what}) within ${deadline.timeoutMs} ms; check that the plugin runs and is not overloaded, or raise ${deadline.timeoutKey} in the provider config`,
      { cause: reason },
    );
  }

  /** Closes idle connections. */
  close(): void {
    this.#agent.destroy();
  }

  async #send(
    input: CallInput,
    headers: Record<string, string | number>,
    body: Buffer | undefined,
    deadline: Deadline,
  ): Promise<http.IncomingMessage> {
    const signal = deadline.signal;
    const url = this.#config.url ? new URL(this.#config.url) : undefined;
    const base = url?.pathname.replace(/\/$/, "") ?? "";
    const secure = url?.protocol === "https:";
    const tls = secure ? await this.#files.tls() : {};
    const request = {
      method: input.method,
      path: base + input.path,
      headers,
      agent: this.#agent,
      ...(url
        ? { hostname: url.hostname.replace(/^\[|\]$/g, ""), port: url.port || undefined }
        : { socketPath: this.#config.socket }),
      ...tls,
    };
    return await new Promise<http.IncomingMessage>((resolve, reject) => {
      const onAbort = () => {
        req.destroy();
        reject(this.#aborted(input, deadline));
      };
      const req = (secure ? https : http).request(request, (res) => {
        signal?.removeEventListener("abort", onAbort);
        resolve(res);
      });
      req.on("error", (err) => {
        signal?.removeEventListener("abort", onAbort);
        if (signal?.aborted) return;
        reject(
          new TransientError(
            `${this.endpoint} does not answer ${input.method} ${input.path} (${input.what}): ${
              this.redact(err.message)
            }; check that interLink (or the plugin) runs and the url or socket is right`,
            { cause: err },
          ),
        );
      });
      if (signal?.aborted) return onAbort();
      signal?.addEventListener("abort", onAbort, { once: true });
      req.end(body);
    });
  }
}

/** A call's abort signal and the timeout in it. */
interface Deadline {
  signal?: AbortSignal;
  timeoutMs: number;
  timeoutKey: string;
}

/** The answer's body as text, refused past `max` bytes. */
async function readBounded(
  response: http.IncomingMessage,
  max: number,
  what: string,
  endpoint: string,
): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > max) {
      response.destroy();
      throw new TransientError(
        `${endpoint} answered ${what} with more than ${max} bytes; raise maxResponseBytes in the provider config if that is expected`,
      );
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}
