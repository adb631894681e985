/**
 * Reading one kubeconfig file into checked entries, and merging several the way kubectl does
 * (client-go `tools/clientcmd/loader.go`, `ClientConfigLoadingRules.Load`): the first file that
 * names a cluster, user or context wins that name, the first non-empty `current-context` wins,
 * and relative file paths are resolved against the directory of the file they appear in.
 * @module
 */
import { dirname, isAbsolute, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { KubeConfigError } from "../errors.ts";
import type { ExecConfig } from "./exec_credential.ts";
import { decodePemData, Fields } from "./_fields.ts";

/** `clusters[].cluster` with data fields decoded and file paths made absolute. */
export interface KubeconfigCluster {
  server?: string;
  caFile?: string;
  /** PEM text from `certificate-authority-data`. */
  caData?: string;
  insecureSkipTlsVerify?: boolean;
  /** `tls-server-name`: the name the apiserver's certificate is checked against. */
  tlsServerName?: string;
  proxyUrl?: string;
}

/** `users[].user` with data fields decoded and file paths made absolute. */
export interface KubeconfigUser {
  clientCertFile?: string;
  clientCertData?: string;
  clientKeyFile?: string;
  clientKeyData?: string;
  token?: string;
  tokenFile?: string;
  username?: string;
  password?: string;
  exec?: ExecConfig;
}

/** `contexts[].context`. */
export interface KubeconfigContext {
  cluster: string;
  user: string;
  namespace?: string;
}

/** One named entry and where it was read from, so errors can point at it. */
export interface Named<T> {
  name: string;
  value: T;
  /** The file the entry came from. */
  path: string;
  /** Its place in that file, e.g. `users[2].user`. */
  field: string;
}

/** A parsed kubeconfig, one file or several merged. */
export interface Kubeconfig {
  /** Files read, in precedence order. */
  paths: string[];
  currentContext?: string;
  clusters: Map<string, Named<KubeconfigCluster>>;
  users: Map<string, Named<KubeconfigUser>>;
  contexts: Map<string, Named<KubeconfigContext>>;
}

/** Parses and checks one kubeconfig file's text; `path` names it in errors and anchors relative paths. */
export function parseKubeconfig(text: string, path: string): Kubeconfig {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new KubeConfigError(
      `not valid YAML (${(err as Error).message.split("\n")[0]}); fix the file or point ` +
        "--kubeconfig at another one",
      { path, cause: err },
    );
  }
  const config: Kubeconfig = {
    paths: [path],
    clusters: new Map(),
    users: new Map(),
    contexts: new Map(),
  };
  if (doc === null || doc === undefined) return config; // an empty file is an empty config
  const root = new Fields(doc, "", path);
  root.requireObject();
  config.currentContext = root.string("current-context") || undefined;
  const base = dirname(resolve(path));
  readList(root, "clusters", "cluster", config.clusters, (f) => readCluster(f, base));
  readList(root, "users", "user", config.users, (f) => readUser(f, base));
  readList(root, "contexts", "context", config.contexts, readContext);
  return config;
}

function readList<T>(
  root: Fields,
  key: string,
  inner: string,
  into: Map<string, Named<T>>,
  read: (fields: Fields) => T,
): void {
  for (const item of root.list(key)) {
    item.requireObject();
    const name = item.requiredString("name");
    const body = item.child(inner);
    if (into.has(name)) return; // kubectl keeps the first entry of a name
    into.set(name, { name, value: read(body), path: root.path, field: body.field });
  }
}

function absolute(file: string | undefined, base: string): string | undefined {
  if (!file) return undefined;
  return isAbsolute(file) ? file : resolve(base, file);
}

function readCluster(f: Fields, base: string): KubeconfigCluster {
  const caData = f.string("certificate-authority-data");
  return {
    server: f.string("server"),
    caFile: absolute(f.string("certificate-authority"), base),
    caData: caData ? decodePemData(caData, f, "certificate-authority-data") : undefined,
    insecureSkipTlsVerify: f.boolean("insecure-skip-tls-verify"),
    tlsServerName: f.string("tls-server-name"),
    proxyUrl: f.string("proxy-url"),
  };
}

function readUser(f: Fields, base: string): KubeconfigUser {
  if (f.has("auth-provider")) {
    throw f.error(
      "auth-provider",
      "auth-provider plugins were removed from Kubernetes clients in 1.26 and are not " +
        "supported; use an exec credential plugin (users[].user.exec) instead",
    );
  }
  const certData = f.string("client-certificate-data");
  const keyData = f.string("client-key-data");
  const execFields = f.has("exec") ? f.child("exec") : undefined;
  return {
    clientCertFile: absolute(f.string("client-certificate"), base),
    clientCertData: certData ? decodePemData(certData, f, "client-certificate-data") : undefined,
    clientKeyFile: absolute(f.string("client-key"), base),
    clientKeyData: keyData ? decodePemData(keyData, f, "client-key-data") : undefined,
    token: f.string("token"),
    tokenFile: absolute(f.string("tokenFile"), base),
    username: f.string("username"),
    password: f.string("password"),
    exec: execFields ? readExec(execFields, base) : undefined,
  };
}

function readExec(f: Fields, base: string): ExecConfig {
  f.requireObject();
  const apiVersion = f.requiredString("apiVersion");
  if (apiVersion === "client.authentication.k8s.io/v1alpha1") {
    throw f.error(
      "apiVersion",
      "client.authentication.k8s.io/v1alpha1 is no longer supported; use " +
        "client.authentication.k8s.io/v1",
    );
  }
  let command = f.requiredString("command");
  // Like kubectl: only a command with a slash is a path relative to the kubeconfig.
  if (command.includes("/") && !isAbsolute(command)) command = resolve(base, command);
  const mode = f.string("interactiveMode");
  if (mode !== undefined && !["Never", "IfAvailable", "Always"].includes(mode)) {
    throw f.error("interactiveMode", `is ${mode}; use Never, IfAvailable or Always`);
  }
  return {
    apiVersion,
    command,
    args: f.list("args").map((a) => a.asString()),
    env: f.list("env").map((e) => ({
      name: e.requiredString("name"),
      value: e.string("value") ?? "",
    })),
    interactiveMode: mode as ExecConfig["interactiveMode"],
    provideClusterInfo: f.boolean("provideClusterInfo"),
    installHint: f.string("installHint"),
  };
}

function readContext(f: Fields): KubeconfigContext {
  return {
    cluster: f.requiredString("cluster"),
    user: f.string("user") ?? "",
    namespace: f.string("namespace") || undefined,
  };
}

/** Merges files given in precedence order: the first to define a name or a current context wins. */
export function mergeKubeconfigs(configs: Kubeconfig[]): Kubeconfig {
  const merged: Kubeconfig = {
    paths: [],
    clusters: new Map(),
    users: new Map(),
    contexts: new Map(),
  };
  for (const config of configs) {
    merged.paths.push(...config.paths);
    merged.currentContext ||= config.currentContext;
    for (const key of ["clusters", "users", "contexts"] as const) {
      const into = merged[key] as Map<string, unknown>;
      for (const [name, entry] of config[key]) if (!into.has(name)) into.set(name, entry);
    }
  }
  return merged;
}
