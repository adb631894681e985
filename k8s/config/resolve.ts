/**
 * Turning a parsed kubeconfig and a context name into a {@link ConnectionConfig}: the context's
 * cluster and user are looked up, their files read, and their credentials checked the way
 * client-go's `tools/clientcmd/validation.go` checks them (one of data or file, a certificate
 * needs its key, one authentication method).
 * @module
 */
import type { Clock } from "../../base/clock.ts";
import { KubeConfigError } from "../errors.ts";
import { ExecCredentialSource } from "./exec_credential.ts";
import type { Kubeconfig, KubeconfigCluster, KubeconfigUser, Named } from "./kubeconfig_file.ts";
import { TokenFileSource } from "./token_file.ts";
import type { ConnectionConfig, Credentials } from "./types.ts";

/** Options for {@link resolveContext}. */
export interface ResolveContextOptions {
  /** Context to use instead of `current-context`. */
  context?: string;
  clock?: Clock;
}

/** Builds the connection for one context of a (possibly merged) kubeconfig. */
export async function resolveContext(
  kubeconfig: Kubeconfig,
  options: ResolveContextOptions = {},
): Promise<ConnectionConfig> {
  const files = kubeconfig.paths.join(", ");
  const contextName = options.context || kubeconfig.currentContext;
  if (!contextName) {
    throw new KubeConfigError(
      `kubeconfig ${files}: no current-context is set and no context was asked for; set ` +
        `current-context or pass a context (${available(kubeconfig.contexts)})`,
    );
  }
  const context = kubeconfig.contexts.get(contextName);
  if (!context) {
    throw new KubeConfigError(
      `kubeconfig ${files}: context "${contextName}" is not defined (${
        available(kubeconfig.contexts)
      }); choose one of those or add it`,
    );
  }
  const cluster = lookup(kubeconfig.clusters, context.value.cluster, context, "cluster");
  const user = context.value.user
    ? lookup(kubeconfig.users, context.value.user, context, "user")
    : undefined;
  const server = serverUrl(cluster);
  checkTls(cluster, server);
  const caCerts = await clusterCa(cluster);
  const config: ConnectionConfig = {
    server,
    caCerts,
    proxyUrl: cluster.value.proxyUrl,
    namespace: context.value.namespace ?? "default",
    source: `kubeconfig ${files} (context "${contextName}")`,
  };
  if (user) await applyUser(config, user, cluster, options.clock);
  return config;
}

function available(map: Map<string, unknown>): string {
  return map.size === 0 ? "the file defines no contexts" : `defined: ${[...map.keys()].join(", ")}`;
}

function lookup<T>(
  map: Map<string, Named<T>>,
  name: string,
  context: Named<unknown>,
  kind: "cluster" | "user",
): Named<T> {
  const found = map.get(name);
  if (found) return found;
  throw new KubeConfigError(
    `refers to ${kind} "${name}", which no ${kind}s[] entry defines (${available(map)}); ` +
      `add it or fix the name`,
    { path: context.path, field: `${context.field}.${kind}` },
  );
}

function fieldError(entry: Named<unknown>, key: string, message: string, cause?: unknown) {
  return new KubeConfigError(message, { path: entry.path, field: `${entry.field}.${key}`, cause });
}

function serverUrl(cluster: Named<KubeconfigCluster>): string {
  const raw = cluster.value.server;
  if (!raw) throw fieldError(cluster, "server", "is missing; set the apiserver's https:// URL");
  // kubectl accepts a bare host:port and assumes https.
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `https://${raw}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch (err) {
    throw fieldError(cluster, "server", `${raw} is not a URL; use https://host:port`, err);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw fieldError(cluster, "server", `${raw} must use https:// (or http://)`);
  }
  return url.href.replace(/\/+$/, "");
}

/**
 * Refuses the TLS settings Deno's `fetch` cannot apply to one client, at start-up, instead of
 * failing every request later: `insecure-skip-tls-verify` (Deno turns verification off only for
 * the whole process, with a run-time flag the shipped binary does not carry) and a
 * `tls-server-name` other than the server URL's host (`Deno.createHttpClient` sends and checks
 * the URL's host only). A `tls-server-name` equal to that host is what happens anyway.
 */
function checkTls(cluster: Named<KubeconfigCluster>, server: string): void {
  if (cluster.value.insecureSkipTlsVerify) {
    throw fieldError(
      cluster,
      "insecure-skip-tls-verify",
      "is true, which vkubelet does not support: it always verifies the apiserver's " +
        "certificate; remove it and set certificate-authority-data (or certificate-authority) " +
        "to the CA that signed the apiserver's certificate",
    );
  }
  const name = cluster.value.tlsServerName;
  const host = new URL(server).hostname.replace(/^\[|\]$/g, "");
  if (name && name.toLowerCase() !== host.toLowerCase()) {
    throw fieldError(
      cluster,
      "tls-server-name",
      `is ${name}, but vkubelet can only check the apiserver's certificate against the ` +
        `server URL's host (${host}); set server to https://${name}:${
          new URL(server).port || 443
        } (with ${name} resolving to the apiserver's address, e.g. by a hosts-file entry) and remove tls-server-name`,
    );
  }
}

async function clusterCa(cluster: Named<KubeconfigCluster>): Promise<string[] | undefined> {
  const { caData, caFile } = cluster.value;
  if (caData && caFile) {
    throw fieldError(
      cluster,
      "certificate-authority",
      "is set together with certificate-authority-data; keep only one of them",
    );
  }
  if (caData) return [caData];
  if (caFile) return [await readPem(caFile, cluster, "certificate-authority")];
  return undefined;
}

async function readPem(file: string, entry: Named<unknown>, key: string): Promise<string> {
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (err) {
    throw fieldError(
      entry,
      key,
      `${file} cannot be read: ${(err as Error).message}; fix the path`,
      err,
    );
  }
  if (!text.includes("-----BEGIN ")) {
    throw fieldError(entry, key, `${file} is not a PEM file (no -----BEGIN line)`);
  }
  return text;
}

async function applyUser(
  config: ConnectionConfig,
  user: Named<KubeconfigUser>,
  cluster: Named<KubeconfigCluster>,
  clock: Clock | undefined,
): Promise<void> {
  const u = user.value;
  const credentials: Credentials = {};
  const cert = await pemFromDataOrFile(
    user,
    "client-certificate",
    u.clientCertData,
    u.clientCertFile,
  );
  const key = await pemFromDataOrFile(user, "client-key", u.clientKeyData, u.clientKeyFile);
  if (cert && !key) {
    throw fieldError(user, "client-key", "is missing; a client certificate needs its key");
  }
  if (key && !cert) {
    throw fieldError(user, "client-certificate", "is missing; a client key needs its certificate");
  }
  if (cert && key) credentials.clientCertificate = { cert, key };
  if ((u.token || u.tokenFile) && (u.username || u.password)) {
    throw fieldError(
      user,
      "token",
      "is set together with username/password; keep one authentication method",
    );
  }
  if (u.exec && (u.tokenFile || u.token)) {
    // client-go's validation refuses more than one authentication method on a user
    // (kubernetes/client-go tools/clientcmd/validation.go validateAuthInfo).
    throw fieldError(
      user,
      "exec",
      `is set together with ${u.tokenFile ? "tokenFile" : "token"}; keep one of them (the exec ` +
        "plugin, or the token)",
    );
  }
  if (u.username || u.password) {
    credentials.basic = { username: u.username ?? "", password: u.password ?? "" };
  }
  if (u.token && !u.tokenFile) credentials.token = u.token;
  if (Object.keys(credentials).length > 0) config.credentials = credentials;
  if (u.tokenFile) {
    config.credentialSource = new TokenFileSource(u.tokenFile, {
      clock,
      kubeconfigPath: user.path,
      field: `${user.field}.tokenFile`,
    });
  }
  if (u.exec) {
    config.credentialSource = new ExecCredentialSource(u.exec, {
      clock,
      kubeconfigPath: user.path,
      field: `${user.field}.exec`,
      cluster: {
        server: config.server,
        "certificate-authority-data": config.caCerts ? btoa(config.caCerts.join("\n")) : undefined,
        "proxy-url": cluster.value.proxyUrl,
      },
    });
  }
}

async function pemFromDataOrFile(
  entry: Named<unknown>,
  key: string,
  data: string | undefined,
  file: string | undefined,
): Promise<string | undefined> {
  if (data && file) {
    throw fieldError(entry, key, `is set together with ${key}-data; keep only one of them`);
  }
  if (data) return data;
  if (file) return await readPem(file, entry, key);
  return undefined;
}
