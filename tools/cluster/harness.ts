/**
 * The control plane for Deno tests: {@link useCluster} brings the local cluster up once per
 * test process (or reuses the running one) and hands out kubectl, fresh namespaces and client
 * certificates. `deno task test` brings it up before and down after the whole run.
 * @module
 */
import {
  clusterPaths,
  type CommandResult,
  type Component,
  readState,
  runCommand,
} from "./cluster.ts";
import { METRICS_SERVER } from "./metrics_server.ts";

/** The result of running kubectl. */
export type KubectlResult = CommandResult;

/** Paths of a certificate and its key. */
export interface CertFiles {
  certFile: string;
  keyFile: string;
}

/** What a test gets from {@link useCluster}. */
export interface TestCluster {
  /** `https://127.0.0.1:PORT` */
  server: string;
  /** Admin kubeconfig (`system:masters`, client certificate). */
  kubeconfigPath: string;
  /** ca.crt, ca.key, admin.crt, admin.key, front-proxy-ca.crt, sa.pub ... */
  pkiDir: string;
  /** The multi-call binary (`BINARY kubectl ...`, `BINARY cert ...`). */
  binary: string;
  /** Runs kubectl as the admin; never throws on a non-zero exit. */
  kubectl(
    args: string[],
    options?: { stdin?: string; signal?: AbortSignal },
  ): Promise<KubectlResult>;
  /**
   * kubectl as the admin in `namespace`, for steps that must work: resolves to stdout; a
   * non-zero exit rejects with the command and its stderr.
   */
  kubectlIn(namespace: string): (args: string[], stdin?: string) => Promise<string>;
  /** Creates a namespace with a unique name and waits for its default service account. */
  newNamespace(prefix?: string): Promise<string>;
  /** Issues a client certificate from the cluster CA (user = cn, groups = orgs). */
  issueClientCert(cn: string, orgs?: string[]): Promise<CertFiles>;
  /** Issues a serving certificate from the cluster CA for the given DNS names and IPs. */
  issueServingCert(name: string, sans: string[]): Promise<CertFiles>;
  /**
   * Writes a kubeconfig for a kubelet identity (`system:node:<node>`, group `system:nodes`), as
   * a real node has: subject to the Node authorizer and the NodeRestriction admission plugin.
   */
  nodeKubeconfig(nodeName: string): Promise<string>;
  /** Writes a kubeconfig for any client certificate identity. */
  userKubeconfig(cn: string, orgs?: string[]): Promise<string>;
  /**
   * Writes `text` (mode 0600) to a new file beside the issued certificates, which `down` removes
   * with them: a test's provider config outlives the test's temp files only until then.
   */
  writeScratchFile(prefix: string, suffix: string, text: string): Promise<string>;
  /** Stops the apiserver until {@link TestCluster.startApiserver}; for reconnect tests. */
  stopApiserver(): Promise<void>;
  /** Starts the apiserver again and waits until it is ready. */
  startApiserver(): Promise<void>;
}

const cli = new URL("./cli.ts", import.meta.url).pathname;
const decoder = new TextDecoder();
const clusters = new Map<string, Promise<TestCluster>>();

async function runCli(name: string, args: string[]): Promise<void> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", cli, `--name=${name}`, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(
      `deno task cluster ${args.join(" ")} failed:\n${decoder.decode(out.stderr)}${
        decoder.decode(out.stdout)
      }`,
    );
  }
}

/** Options for {@link useCluster}: how a cluster other than the default one is started. */
export interface UseClusterOptions {
  /** `up --token-auth-file`: the apiserver also accepts this file's static bearer tokens. */
  tokenAuthFile?: string;
  /** `up --service-range`: the cluster's Service IP range (see `UpOptions.serviceRange`). */
  serviceRange?: string;
}

/**
 * The test cluster, started on first use. `name` picks a second, independent cluster (for
 * tests that need two, such as the kubernetes provider's); `deno task test` stops it afterwards.
 */
export function useCluster(
  name = "default",
  options: UseClusterOptions = {},
): Promise<TestCluster> {
  let cluster = clusters.get(name);
  if (!cluster) {
    cluster = connect(name, options);
    clusters.set(name, cluster);
  }
  return cluster;
}

/** What a test gets from {@link useMetricsServer}. */
export interface TestMetricsServer {
  /** Its secure port on 127.0.0.1. */
  port: number;
  /** Its log file. */
  log: string;
  /** Its scrape interval (`--metric-resolution`), in seconds. */
  resolutionSeconds: number;
}

const metricsServers = new Map<string, Promise<TestMetricsServer>>();

/**
 * metrics-server for the cluster `name`, started on first use (built on first use, a few
 * minutes) and registered as the `v1beta1.metrics.k8s.io` APIService; it scrapes every 10 s and
 * verifies kubelet serving certificates against the cluster CA. `down` stops it with the cluster.
 */
export function useMetricsServer(name = "default"): Promise<TestMetricsServer> {
  let server = metricsServers.get(name);
  if (!server) {
    server = (async () => {
      await useCluster(name);
      await runCli(name, ["up", "--metrics-server", "--metric-resolution=10"]);
      const addon = readState(clusterPaths(name))?.addons?.[METRICS_SERVER];
      if (!addon) throw new Error("cluster up --metrics-server succeeded but recorded no process");
      const port = Number(addon.args.find((a) => a.startsWith("--secure-port="))?.split("=")[1]);
      return { port, log: addon.log, resolutionSeconds: 10 };
    })();
    metricsServers.set(name, server);
  }
  return server;
}

async function connect(name: string, options: UseClusterOptions): Promise<TestCluster> {
  const tokens = options.tokenAuthFile ? [`--token-auth-file=${options.tokenAuthFile}`] : [];
  const range = options.serviceRange ? [`--service-range=${options.serviceRange}`] : [];
  await runCli(name, ["up", ...tokens, ...range]);
  const paths = clusterPaths(name);
  const state = readState(paths);
  if (!state) throw new Error("cluster up succeeded but left no state");
  const { pki: pkiDir, adminKubeconfig } = paths;
  const binary = state.binary;
  let serial = 0;
  const restart = (command: "stop" | "start", c: Component) => runCli(name, [command, c]);

  function kubectl(
    args: string[],
    options: { stdin?: string; signal?: AbortSignal } = {},
  ): Promise<KubectlResult> {
    return runCommand(binary, ["kubectl", `--kubeconfig=${adminKubeconfig}`, ...args], options);
  }

  async function issue(name: string, args: string[]): Promise<CertFiles> {
    const dir = `${paths.dir}/certs`;
    await Deno.mkdir(dir, { recursive: true });
    const out = `${dir}/${name}-${Deno.pid}-${++serial}`;
    const res = await new Deno.Command(binary, {
      args: ["cert", `--ca=${pkiDir}/ca`, `--out=${out}`, ...args],
    }).output();
    if (!res.success) {
      throw new Error(`issuing a certificate failed: ${decoder.decode(res.stderr)}`);
    }
    return { certFile: `${out}.crt`, keyFile: `${out}.key` };
  }

  async function userKubeconfig(cn: string, orgs: string[] = []): Promise<string> {
    const { certFile, keyFile } = await issue("client", [
      `--cn=${cn}`,
      ...(orgs.length ? [`--o=${orgs.join(",")}`] : []),
    ]);
    const b64 = async (path: string) => btoa(await Deno.readTextFile(path));
    const path = certFile.replace(/\.crt$/, ".kubeconfig");
    await Deno.writeTextFile(
      path,
      [
        "apiVersion: v1",
        "kind: Config",
        "clusters:",
        "- name: local",
        "  cluster:",
        `    server: ${state!.server}`,
        `    certificate-authority-data: ${await b64(`${pkiDir}/ca.crt`)}`,
        "users:",
        "- name: user",
        "  user:",
        `    client-certificate-data: ${await b64(certFile)}`,
        `    client-key-data: ${await b64(keyFile)}`,
        "contexts:",
        "- name: local",
        "  context: {cluster: local, user: user}",
        "current-context: local",
        "",
      ].join("\n"),
      { mode: 0o600 },
    );
    return path;
  }

  return {
    server: state.server,
    kubeconfigPath: adminKubeconfig,
    pkiDir,
    binary,
    kubectl,
    kubectlIn(namespace) {
      return async (args, stdin) => {
        const res = await kubectl(["-n", namespace, ...args], { stdin });
        if (res.code !== 0) throw new Error(`kubectl ${args.join(" ")}: ${res.stderr}`);
        return res.stdout;
      };
    },
    async newNamespace(prefix = "test") {
      const name = `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
      const created = await kubectl(["create", "namespace", name]);
      if (created.code !== 0) throw new Error(`creating namespace ${name}: ${created.stderr}`);
      // Pods are refused until the service-account controller has made "default".
      for (let i = 0; i < 300; i++) {
        if ((await kubectl(["-n", name, "get", "serviceaccount", "default"])).code === 0) {
          return name;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`namespace ${name} got no default service account within 30 s`);
    },
    issueClientCert(cn, orgs = []) {
      return issue("client", [`--cn=${cn}`, ...(orgs.length ? [`--o=${orgs.join(",")}`] : [])]);
    },
    issueServingCert(name, sans) {
      return issue("serving", [`--cn=${name}`, `--san=${sans.join(",")}`]);
    },
    nodeKubeconfig(nodeName) {
      return userKubeconfig(`system:node:${nodeName}`, ["system:nodes"]);
    },
    userKubeconfig,
    async writeScratchFile(prefix, suffix, text) {
      const dir = `${paths.dir}/certs`;
      await Deno.mkdir(dir, { recursive: true });
      const path = await Deno.makeTempFile({ dir, prefix, suffix });
      await Deno.writeTextFile(path, text, { mode: 0o600 });
      return path;
    },
    stopApiserver: () => restart("stop", "kube-apiserver"),
    startApiserver: () => restart("start", "kube-apiserver"),
  };
}
