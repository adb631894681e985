/**
 * Exec credential plugins (`users[].user.exec` in a kubeconfig): run a command that prints an
 * `ExecCredential` (`client.authentication.k8s.io/v1` or `v1beta1`) with a token or a client
 * certificate, as client-go's `plugin/pkg/client/auth/exec/exec.go` does. The answer is cached
 * until its `expirationTimestamp`, or until the apiserver answers 401.
 * @module
 */
import { raceSignal } from "../../base/cancel.ts";
import { type Clock, realClock } from "../../base/clock.ts";
import { KubeConfigError } from "../errors.ts";
import type { Credentials, CredentialSource } from "./types.ts";

/** The `exec` stanza of a kubeconfig user, with relative command paths already resolved. */
export interface ExecConfig {
  apiVersion: string;
  command: string;
  args?: string[];
  env?: { name: string; value: string }[];
  interactiveMode?: "Never" | "IfAvailable" | "Always";
  provideClusterInfo?: boolean;
  installHint?: string;
}

/** Cluster details handed to a plugin that asked for them (`provideClusterInfo: true`). */
export interface ExecClusterInfo {
  server: string;
  "certificate-authority-data"?: string;
  "insecure-skip-tls-verify"?: boolean;
  "proxy-url"?: string;
}

/** Options for {@link ExecCredentialSource}. */
export interface ExecCredentialSourceOptions {
  cluster?: ExecClusterInfo;
  /** Kubeconfig and field the stanza came from, for error messages. */
  kubeconfigPath?: string;
  field?: string;
  clock?: Clock;
  /** Longest a plugin may run; default 60 s. */
  timeoutMs?: number;
  /**
   * After a run, 401s within this long do not run the plugin again; doubled each time the
   * fresh credential is rejected too, up to 5 min. Default 1 s.
   */
  refreshBackoffMs?: number;
}

/** The longest wait between two runs caused by rejected credentials. */
const MAX_REFRESH_BACKOFF_MS = 5 * 60_000;

const decoder = new TextDecoder();

/** Runs an exec credential plugin when credentials are needed, sharing one run among callers. */
export class ExecCredentialSource implements CredentialSource {
  readonly description: string;
  #config: ExecConfig;
  #options: ExecCredentialSourceOptions;
  #clock: Clock;
  #cached?: { credentials: Credentials; expiresAt: number; fetchedAt: number; retry: boolean };
  #running?: Promise<Credentials>;
  #backoffMs: number;
  /** The next run replaces a credential the apiserver rejected. */
  #retrying = false;

  constructor(config: ExecConfig, options: ExecCredentialSourceOptions = {}) {
    this.#config = config;
    this.#options = options;
    this.#clock = options.clock ?? realClock;
    this.#backoffMs = options.refreshBackoffMs ?? 1_000;
    this.description = `exec plugin ${config.command}`;
  }

  get(options: { signal?: AbortSignal } = {}): Promise<Credentials> {
    if (this.#cached && this.#clock.now() < this.#cached.expiresAt) {
      return Promise.resolve(this.#cached.credentials);
    }
    // Not tied to one caller's signal: other callers may be waiting on the same run.
    this.#running ??= this.#run().finally(() => this.#running = undefined);
    if (!options.signal) return this.#running;
    return raceSignal(this.#running, options.signal);
  }

  /**
   * Called after a 401. The plugin runs again at most once per back-off: the other requests
   * of the same burst, sent with the same credential, would each run it otherwise, and a
   * credential the apiserver rejects for good (a wrong audience, a revoked role) would run the
   * plugin once per request. client-go's exec authenticator refreshes once per rejected
   * credential too (kubernetes/client-go plugin/pkg/client/auth/exec/exec.go
   * `maybeRefreshCreds`). A credential that lived longer than the longest back-off before it was
   * rejected was rotated, not refused: the back-off starts again from its first step.
   */
  invalidate(): void {
    if (!this.#cached) return;
    const first = this.#options.refreshBackoffMs ?? 1_000;
    const age = this.#clock.now() - this.#cached.fetchedAt;
    if (!this.#cached.retry || age > MAX_REFRESH_BACKOFF_MS) {
      // The first rejection of a credential from an ordinary run: run the plugin again at once.
      this.#backoffMs = first;
    } else {
      // The credential that replaced a rejected one is rejected too: wait before the next run.
      if (age < this.#backoffMs) return;
      this.#backoffMs = Math.min(this.#backoffMs * 2, MAX_REFRESH_BACKOFF_MS);
    }
    this.#cached = undefined;
    this.#retrying = true;
  }

  async #run(): Promise<Credentials> {
    const retry = this.#retrying;
    this.#retrying = false;
    const output = await this.#spawn();
    const { credentials, expiresAt } = this.#parse(output);
    this.#cached = { credentials, expiresAt, fetchedAt: this.#clock.now(), retry };
    return credentials;
  }

  #fail(message: string, cause?: unknown): KubeConfigError {
    const hint = this.#config.installHint ? `; ${this.#config.installHint.trim()}` : "";
    const who = this.#options.field ? "command" : "exec plugin";
    return new KubeConfigError(`${who} ${this.#config.command} ${message}${hint}`, {
      path: this.#options.kubeconfigPath,
      field: this.#options.field,
      cause,
    });
  }

  async #spawn(): Promise<string> {
    const config = this.#config;
    if (config.interactiveMode === "Always") {
      throw this.#fail(
        "needs an interactive terminal (interactiveMode: Always) and vkubelet runs " +
          "unattended; use a plugin that works with interactiveMode Never or IfAvailable",
      );
    }
    const env: Record<string, string> = { KUBERNETES_EXEC_INFO: JSON.stringify(this.#execInfo()) };
    for (const { name, value } of config.env ?? []) env[name] = value;
    let result: Deno.CommandOutput;
    // A hand-made deadline rather than AbortSignal.timeout, so no timer outlives the run.
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), this.#options.timeoutMs ?? 60_000);
    try {
      result = await new Deno.Command(config.command, {
        args: config.args ?? [],
        env,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        signal: deadline.signal,
      }).output();
    } catch (err) {
      const why = err instanceof Deno.errors.NotFound
        ? "was not found; install it or fix the path"
        : `could not be started: ${(err as Error).message}`;
      throw this.#fail(why, err);
    } finally {
      clearTimeout(timer);
    }
    if (!result.success) {
      const stderr = decoder.decode(result.stderr).trim().slice(0, 2000);
      const how = result.signal ? `was killed by ${result.signal}` : `exited with ${result.code}`;
      throw this.#fail(`${how}${stderr ? `: ${stderr}` : ""}`);
    }
    return decoder.decode(result.stdout);
  }

  #execInfo(): unknown {
    const spec: Record<string, unknown> = { interactive: false };
    if (this.#config.provideClusterInfo && this.#options.cluster) {
      spec.cluster = this.#options.cluster;
    }
    return { apiVersion: this.#config.apiVersion, kind: "ExecCredential", spec };
  }

  #parse(stdout: string): { credentials: Credentials; expiresAt: number } {
    let body: {
      apiVersion?: string;
      kind?: string;
      status?: Record<string, string | undefined>;
    };
    try {
      body = JSON.parse(stdout);
    } catch (err) {
      throw this.#fail("printed something that is not JSON; it must print an ExecCredential", err);
    }
    if (body?.kind !== "ExecCredential" || body.apiVersion !== this.#config.apiVersion) {
      throw this.#fail(
        `printed kind ${body?.kind} apiVersion ${body?.apiVersion}; expected an ExecCredential ` +
          `of ${this.#config.apiVersion} (the kubeconfig's exec.apiVersion)`,
      );
    }
    const status = body.status ?? {};
    const credentials: Credentials = {};
    if (status.token) credentials.token = status.token;
    if (status.clientCertificateData || status.clientKeyData) {
      if (!status.clientCertificateData || !status.clientKeyData) {
        throw this.#fail("returned only one of clientCertificateData and clientKeyData");
      }
      credentials.clientCertificate = {
        cert: status.clientCertificateData,
        key: status.clientKeyData,
      };
    }
    if (!credentials.token && !credentials.clientCertificate) {
      throw this.#fail("returned neither status.token nor a client certificate");
    }
    return { credentials, expiresAt: this.#expiry(status.expirationTimestamp) };
  }

  #expiry(timestamp: string | undefined): number {
    if (!timestamp) return Infinity;
    const at = Date.parse(timestamp);
    if (Number.isNaN(at)) throw this.#fail(`status.expirationTimestamp ${timestamp} is not a time`);
    return at;
  }
}
