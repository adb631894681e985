/**
 * metrics-server beside the local control plane, on request (`deno task cluster up
 * --metrics-server`, or {@link ensureMetricsServer} from the test harness): the upstream
 * `sigs.k8s.io/metrics-server`, built from the wrapper module in `metrics_server/` and cached
 * like the control-plane binary, run on loopback, registered as the `v1beta1.metrics.k8s.io`
 * APIService behind a Service of type ExternalName pointing at localhost (there is no
 * kube-proxy here), with the RBAC of its upstream manifests (`manifests/base/rbac.yaml`). It
 * scrapes kubelets with its own service-account token, as it does in a real cluster, and
 * verifies their serving certificates against the cluster CA unless told not to.
 * @module
 */
import { type BuildOptions, cacheDir } from "./build.ts";
import {
  adminHttpClient,
  alive,
  type ClusterPaths,
  clusterPaths,
  type ClusterState,
  exited,
  readState,
  runChecked,
  stopProcess,
} from "./cluster.ts";
import { freePort } from "./ports.ts";

const moduleDir = new URL("./metrics_server/", import.meta.url).pathname;

/** The name metrics-server is recorded under in `state.json`'s addons. */
export const METRICS_SERVER = "metrics-server";
/** The APIService metrics-server is registered as. */
export const METRICS_API_SERVICE = "v1beta1.metrics.k8s.io";

/** The metrics-server version the wrapper module pins. */
export function metricsServerVersion(): string {
  const gomod = Deno.readTextFileSync(`${moduleDir}go.mod`);
  const match = gomod.match(/sigs\.k8s\.io\/metrics-server (v[0-9.]+)/);
  if (!match) throw new Error(`${moduleDir}go.mod does not require sigs.k8s.io/metrics-server`);
  return match[1];
}

async function sourceHash(): Promise<string> {
  const text = ["go.mod", "go.sum", "main.go"]
    .map((f) => `${f}\n${Deno.readTextFileSync(moduleDir + f)}`)
    .join("\n");
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)),
  );
  return Array.from(digest.slice(0, 6), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Returns the path of the metrics-server binary, building it first if it is not cached. */
export async function ensureMetricsServerBinary(options: BuildOptions = {}): Promise<string> {
  const version = metricsServerVersion();
  const path = `${cacheDir}/bin/metrics-server-${version}-${await sourceHash()}`;
  try {
    await Deno.stat(path);
    return path;
  } catch {
    // Not built yet.
  }
  const progress = options.progress ?? (() => {});
  await Deno.mkdir(`${cacheDir}/bin`, { recursive: true });
  progress(`building metrics-server ${version} from Go modules; later runs reuse it`);
  const started = performance.now();
  const tmp = `${path}.tmp-${Deno.pid}`;
  // As upstream's Makefile does: the version goes into client-go's version package.
  const ldflags = `-s -w -X k8s.io/client-go/pkg/version.gitVersion=${version}`;
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command("go", {
      args: ["build", "-trimpath", "-ldflags", ldflags, "-o", tmp, "."],
      cwd: moduleDir,
      stdout: "inherit",
      stderr: "inherit",
      signal: options.signal,
    }).spawn();
  } catch (err) {
    throw new Error("cannot run `go`: metrics-server is built from Go modules; put Go on PATH", {
      cause: err,
    });
  }
  if (!(await child.status).success) {
    await Deno.remove(tmp).catch(() => {});
    throw new Error("go build of metrics-server failed; see the output above");
  }
  await Deno.rename(tmp, path);
  progress(`built ${path} in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  return path;
}

/** How metrics-server runs. */
export interface MetricsServerOptions {
  /** `--metric-resolution` in seconds; at least 10 (metrics-server's minimum). Default 10. */
  resolutionSeconds?: number;
  /** Skip verifying kubelet serving certificates (`--kubelet-insecure-tls`). */
  kubeletInsecureTls?: boolean;
  /** Called with progress lines for a person watching. */
  progress?: (line: string) => void;
}

/** Where a running metrics-server is. */
export interface MetricsServerInfo {
  pid: number;
  /** Its secure port on 127.0.0.1. */
  port: number;
  log: string;
  binary: string;
}

function metricsServerArgs(paths: ClusterPaths, port: number, options: MetricsServerOptions) {
  const resolution = options.resolutionSeconds ?? 10;
  if (!Number.isInteger(resolution) || resolution < 10) {
    throw new RangeError(`metric resolution ${resolution} s: metrics-server needs 10 s or more`);
  }
  const kubeconfig = `${paths.dir}/metrics-server.kubeconfig`;
  return [
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    "--bind-address=127.0.0.1",
    `--secure-port=${port}`,
    `--tls-cert-file=${paths.pki}/metrics-server-serving.crt`,
    `--tls-private-key-file=${paths.pki}/metrics-server-serving.key`,
    "--kubelet-preferred-address-types=InternalIP",
    "--kubelet-use-node-status-port",
    `--metric-resolution=${resolution}s`,
    // metrics-server wants the timeout below 90% of the resolution.
    `--kubelet-request-timeout=${Math.min(10, Math.floor(resolution / 2))}s`,
    options.kubeletInsecureTls
      ? "--kubelet-insecure-tls"
      : `--kubelet-certificate-authority=${paths.pki}/ca.crt`,
    "--profiling=false",
  ];
}

/**
 * The objects of metrics-server's upstream manifests that apply out of cluster (service
 * account, RBAC, APIService), plus the ExternalName Service that routes the APIService to
 * metrics-server on loopback.
 */
export function metricsServerManifests(port: number, caPem: string): unknown {
  const ns = "kube-system";
  const sa = [{ kind: "ServiceAccount", name: METRICS_SERVER, namespace: ns }];
  const rbac = "rbac.authorization.k8s.io/v1";
  const clusterRole = (name: string) => ({
    apiGroup: rbac.split("/")[0],
    kind: "ClusterRole",
    name,
  });
  return {
    apiVersion: "v1",
    kind: "List",
    items: [
      {
        apiVersion: "v1",
        kind: "ServiceAccount",
        metadata: { name: METRICS_SERVER, namespace: ns },
      },
      {
        apiVersion: rbac,
        kind: "ClusterRole",
        metadata: {
          name: "system:aggregated-metrics-reader",
          labels: Object.fromEntries(
            ["view", "edit", "admin"].map((
              r,
            ) => [`rbac.authorization.k8s.io/aggregate-to-${r}`, "true"]),
          ),
        },
        rules: [{
          apiGroups: ["metrics.k8s.io"],
          resources: ["pods", "nodes"],
          verbs: ["get", "list", "watch"],
        }],
      },
      {
        apiVersion: rbac,
        kind: "RoleBinding",
        metadata: { name: "metrics-server-auth-reader", namespace: ns },
        roleRef: {
          apiGroup: rbac.split("/")[0],
          kind: "Role",
          name: "extension-apiserver-authentication-reader",
        },
        subjects: sa,
      },
      {
        apiVersion: rbac,
        kind: "ClusterRoleBinding",
        metadata: { name: "metrics-server:system:auth-delegator" },
        roleRef: clusterRole("system:auth-delegator"),
        subjects: sa,
      },
      {
        apiVersion: rbac,
        kind: "ClusterRole",
        metadata: { name: "system:metrics-server" },
        rules: [
          { apiGroups: [""], resources: ["nodes/metrics"], verbs: ["get"] },
          { apiGroups: [""], resources: ["pods", "nodes"], verbs: ["get", "list", "watch"] },
        ],
      },
      {
        apiVersion: rbac,
        kind: "ClusterRoleBinding",
        metadata: { name: "system:metrics-server" },
        roleRef: clusterRole("system:metrics-server"),
        subjects: sa,
      },
      {
        // The aggregator resolves an ExternalName Service to externalName:port
        // (kubernetes/apiserver : pkg/util/proxy/proxy.go : ResolveCluster), and verifies the
        // serving certificate for metrics-server.kube-system.svc against caBundle.
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: METRICS_SERVER, namespace: ns, labels: { "k8s-app": METRICS_SERVER } },
        spec: {
          type: "ExternalName",
          externalName: "localhost",
          ports: [{ name: "https", port, protocol: "TCP" }],
        },
      },
      {
        apiVersion: "apiregistration.k8s.io/v1",
        kind: "APIService",
        metadata: { name: METRICS_API_SERVICE, labels: { "k8s-app": METRICS_SERVER } },
        spec: {
          service: { name: METRICS_SERVER, namespace: ns, port },
          group: "metrics.k8s.io",
          version: "v1beta1",
          caBundle: btoa(caPem),
          groupPriorityMinimum: 100,
          versionPriority: 100,
        },
      },
    ],
  };
}

/** Issues the serving certificate (once) and writes a token kubeconfig (each start). */
async function prepareCredentials(state: ClusterState): Promise<void> {
  const { paths, binary } = state;
  const serving = `${paths.pki}/metrics-server-serving`;
  try {
    await Deno.stat(`${serving}.crt`);
  } catch {
    const sans = `${METRICS_SERVER}.kube-system.svc,localhost,127.0.0.1`;
    await runChecked(binary, [
      "cert",
      `--ca=${paths.pki}/ca`,
      `--out=${serving}`,
      "--cn=metrics-server",
      `--san=${sans}`,
    ]);
  }
  // Its own service-account token, as in a real cluster; the kubelet checks it with a
  // TokenReview and authorizes nodes/metrics with a SubjectAccessReview.
  const token = (await runChecked(binary, [
    "kubectl",
    `--kubeconfig=${paths.adminKubeconfig}`,
    "-n",
    "kube-system",
    "create",
    "token",
    METRICS_SERVER,
    "--duration=8760h",
  ])).trim();
  const ca = btoa(await Deno.readTextFile(`${paths.pki}/ca.crt`));
  await Deno.writeTextFile(
    `${paths.dir}/metrics-server.kubeconfig`,
    [
      "apiVersion: v1",
      "kind: Config",
      "clusters:",
      "- name: local",
      `  cluster: {server: "${state.server}", certificate-authority-data: ${ca}}`,
      "users:",
      `- name: ${METRICS_SERVER}`,
      `  user: {token: ${token}}`,
      "contexts:",
      "- name: local",
      `  context: {cluster: local, user: ${METRICS_SERVER}}`,
      "current-context: local",
      "",
    ].join("\n"),
    { mode: 0o600 },
  );
}

function portOf(args: string[]): number {
  return Number(args.find((a) => a.startsWith("--secure-port="))?.split("=")[1]);
}

/**
 * Starts metrics-server for the running cluster at `paths` unless it already runs with the same
 * options, registers it, records it in `state.json` (so `down` stops it) and waits until the
 * `v1beta1.metrics.k8s.io` APIService is Available.
 */
export async function ensureMetricsServer(
  paths = clusterPaths(),
  options: MetricsServerOptions = {},
): Promise<MetricsServerInfo> {
  const state = readState(paths);
  if (!state) throw new Error("the cluster is not up; run: deno task cluster up");
  const progress = options.progress ?? (() => {});
  const binary = await ensureMetricsServerBinary({ progress });
  const previous = state.addons?.[METRICS_SERVER];
  if (previous && alive(previous.pid, previous.binary)) {
    const same = previous.binary === binary &&
      JSON.stringify(previous.args) ===
        JSON.stringify(metricsServerArgs(paths, portOf(previous.args), options));
    if (same && await apiServiceAvailable(paths, state.server)) {
      return { pid: previous.pid, port: portOf(previous.args), log: previous.log, binary };
    }
    await stopProcess(METRICS_SERVER, previous.pid, previous.binary);
  }
  const port = freePort();
  const args = metricsServerArgs(paths, port, options);
  const caPem = await Deno.readTextFile(`${paths.pki}/ca.crt`);
  await runChecked(state.binary, [
    "kubectl",
    `--kubeconfig=${paths.adminKubeconfig}`,
    "apply",
    "-f",
    "-",
  ], JSON.stringify(metricsServerManifests(port, caPem)));
  await prepareCredentials(state);
  const log = `${paths.dir}/logs/${METRICS_SERVER}.log`;
  await Deno.writeTextFile(log, "");
  const child = new Deno.Command("sh", {
    args: ["-c", 'exec "$0" "$@" >>"$VK_LOG" 2>&1', binary, ...args],
    env: { VK_LOG: log },
    detached: true,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  child.unref();
  state.addons = { ...state.addons, [METRICS_SERVER]: { pid: child.pid, args, log, binary } };
  await Deno.writeTextFile(paths.state, JSON.stringify(state, null, 2));
  progress(`started metrics-server (pid ${child.pid}, port ${port})`);
  await waitAvailable(paths, state.server, child.pid, log);
  progress(`APIService ${METRICS_API_SERVICE} is Available`);
  return { pid: child.pid, port, log, binary };
}

async function apiServiceAvailable(paths: ClusterPaths, server: string): Promise<boolean> {
  const client = adminHttpClient(paths);
  try {
    const res = await fetch(
      `${server}/apis/apiregistration.k8s.io/v1/apiservices/${METRICS_API_SERVICE}`,
      { client, signal: AbortSignal.timeout(5000) },
    );
    if (!res.ok) {
      await res.body?.cancel();
      return false;
    }
    const service = await res.json() as {
      status?: { conditions?: { type: string; status: string }[] };
    };
    return service.status?.conditions?.some((c) => c.type === "Available" && c.status === "True") ??
      false;
  } catch {
    return false;
  } finally {
    client.close();
  }
}

async function waitAvailable(
  paths: ClusterPaths,
  server: string,
  pid: number,
  log: string,
  timeoutMs = 90_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await apiServiceAvailable(paths, server)) return;
    if (exited(pid)) {
      const tail = (await Deno.readTextFile(log).catch(() => "")).split("\n").slice(-15).join("\n");
      throw new Error(`metrics-server exited during start-up; the end of ${log}:\n${tail}`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(
    `APIService ${METRICS_API_SERVICE} was not Available after ${timeoutMs / 1000} s; see ${log}` +
      " and: deno task kubectl -- get apiservice " + METRICS_API_SERVICE + " -o yaml",
  );
}

/** Whether metrics-server is recorded for the cluster and still running. */
export function metricsServerRunning(state: ClusterState): boolean {
  const addon = state.addons?.[METRICS_SERVER];
  return addon !== undefined && alive(addon.pid, addon.binary);
}
