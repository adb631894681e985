/**
 * In-cluster configuration: the apiserver address from `KUBERNETES_SERVICE_HOST`/`_PORT` and the
 * pod's service-account token, CA and namespace, as client-go's `rest.InClusterConfig` reads them.
 * The token file is re-read (see {@link TokenFileSource}) because kubelets rotate projected
 * tokens hourly.
 * @module
 */
import { join } from "node:path";
import type { Clock } from "../../base/clock.ts";
import { KubeConfigError } from "../errors.ts";
import { TokenFileSource } from "./token_file.ts";
import type { ConnectionConfig } from "./types.ts";

/** Where a pod finds its service account's files. */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/** Options for {@link loadInClusterConfig}. */
export interface InClusterOptions {
  /** Environment to read; defaults to the process environment. */
  env?: Record<string, string | undefined>;
  /** Folder holding `token`, `ca.crt` and `namespace`; defaults to {@link SERVICE_ACCOUNT_DIR}. */
  serviceAccountDir?: string;
  clock?: Clock;
}

/** True when the environment looks like a pod's (the service host variable is set). */
export function looksInCluster(env: Record<string, string | undefined>): boolean {
  return Boolean(env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT);
}

/** Builds the connection from the pod environment; fails naming the missing variable or file. */
export async function loadInClusterConfig(
  options: InClusterOptions = {},
): Promise<ConnectionConfig> {
  const env = options.env ?? Deno.env.toObject();
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) {
    throw new KubeConfigError(
      "in-cluster configuration needs KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, " +
        "which Kubernetes sets in every pod; outside a cluster pass --kubeconfig instead",
    );
  }
  const dir = options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  const tokenPath = join(dir, "token");
  const caPath = join(dir, "ca.crt");
  const ca = await readRequired(caPath, "service-account CA");
  const tokens = new TokenFileSource(tokenPath, {
    clock: options.clock,
    field: "in-cluster token",
  });
  await tokens.get(); // fail now, with the path, rather than on the first request
  const namespace = (await readOptional(join(dir, "namespace")))?.trim() || "default";
  // An IPv6 service address needs brackets in a URL.
  const hostPart = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  return {
    server: `https://${hostPart}:${port}`,
    caCerts: [ca],
    credentialSource: tokens,
    namespace,
    source: "in-cluster service account",
  };
}

async function readRequired(path: string, what: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (err) {
    throw new KubeConfigError(
      `cannot read the ${what} ${path}: ${(err as Error).message}; in-cluster configuration ` +
        "needs the pod's service account mounted (automountServiceAccountToken must not be false)",
      { cause: err },
    );
  }
}

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch {
    return undefined;
  }
}
