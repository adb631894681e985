/**
 * Runs vkubelet (`main.ts`) as a separate process against a test cluster, as a user would: a
 * node identity (`system:node:<name>`), a serving certificate from the cluster CA, loopback
 * addresses only, and exactly the permissions of `deno task start`.
 * @module
 */
import type { TestCluster } from "./harness.ts";
import { VKUBELET_PERMISSIONS as SHIPPED_PERMISSIONS } from "../../scripts/permissions.ts";
import { freePort } from "./ports.ts";

const mainPath = new URL("../../main.ts", import.meta.url).pathname;
/** The permissions `deno task start` (and the compiled binary) run with. */
export const VKUBELET_PERMISSIONS: string[] = [...SHIPPED_PERMISSIONS];

/** Options for {@link startVkubelet}. */
export interface StartVkubeletOptions {
  nodeName: string;
  provider?: string;
  /** Contents of the provider config file (YAML or JSON), written to a temp file. */
  providerConfig?: string;
  /** More flags. */
  args?: string[];
  /** Flags for `deno run` itself, before main.ts (the streaming bench's `--inspect=…`). */
  denoArgs?: string[];
  /** Another identity than the node's own (`system:node:<name>`), e.g. a ServiceAccount's. */
  kubeconfig?: string;
  /** Reuse the kubeconfig, certificate and port of an earlier run (a restart). */
  like?: RunningVkubelet;
  /** Also append everything it logs to this file. */
  logFile?: string;
  /** More environment variables (added to this process's). */
  env?: Record<string, string>;
  /** Wait until the node is Ready; default true. */
  waitReady?: boolean;
  /**
   * Run in its own process group, so that a terminal's Ctrl-C (SIGINT to the caller's group)
   * does not reach it: the caller cleans up through it first, then stops it.
   */
  detached?: boolean;
}

/** A vkubelet process. */
export interface RunningVkubelet {
  nodeName: string;
  port: number;
  pid: number;
  kubeconfig: string;
  files: { cert: string; key: string; providerConfig?: string; podLogDir?: string };
  /** Everything it logged so far. */
  output(): string;
  /** Sends `signal` and waits for the exit; returns the exit code and how long it took. */
  stop(signal?: Deno.Signal): Promise<{ code: number; ms: number }>;
  /** The exit status, once it has exited. */
  status: Promise<Deno.CommandStatus>;
}

/** Reads the node's Ready condition status ("True", "False", "Unknown") or undefined. */
export async function nodeReady(cluster: TestCluster, nodeName: string) {
  const res = await cluster.kubectl([
    "get",
    "node",
    nodeName,
    "-o",
    'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
  ]);
  return res.code === 0 ? res.stdout.trim() || undefined : undefined;
}

/** Starts vkubelet for `nodeName` and (by default) waits until its node is Ready. */
export async function startVkubelet(
  cluster: TestCluster,
  options: StartVkubeletOptions,
): Promise<RunningVkubelet> {
  const { nodeName } = options;
  const kubeconfig = options.kubeconfig ?? options.like?.kubeconfig ??
    await cluster.nodeKubeconfig(nodeName);
  const serving = options.like
    ? { certFile: options.like.files.cert, keyFile: options.like.files.key }
    : await cluster.issueServingCert(nodeName, ["127.0.0.1", nodeName]);
  let providerConfig = options.like?.files.providerConfig;
  if (options.providerConfig !== undefined) {
    providerConfig = await cluster.writeScratchFile(
      `provider-${nodeName}-`,
      ".yaml",
      options.providerConfig,
    );
  }
  const port = options.like?.port ?? freePort();
  // A test's pod logs go to a directory of its own (kept across a restart of the same run), not
  // to the host's /var/log/pods, where a test that stops vkubelet before deleting its pods would
  // leave them for good. A test that names --pod-log-dir chooses for itself.
  const ownLogDir = options.args?.some((a) => a.startsWith("--pod-log-dir"));
  const podLogDir = ownLogDir ? undefined : options.like?.files.podLogDir ??
    await Deno.makeTempDir({ prefix: `vkubelet-pod-logs-${nodeName}-` });
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...VKUBELET_PERMISSIONS,
      ...(options.denoArgs ?? []),
      mainPath,
      `--nodename=${nodeName}`,
      `--provider=${options.provider ?? "mock"}`,
      ...(providerConfig ? [`--provider-config=${providerConfig}`] : []),
      `--kubeconfig=${kubeconfig}`,
      "--node-ip=127.0.0.1",
      "--listen-address=127.0.0.1",
      `--port=${port}`,
      `--tls-cert-file=${serving.certFile}`,
      `--tls-private-key-file=${serving.keyFile}`,
      ...(podLogDir ? [`--pod-log-dir=${podLogDir}`] : []),
      ...(options.args ?? []),
    ],
    env: { NO_COLOR: "1", ...options.env },
    detached: options.detached ?? false,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let output = "";
  const log = options.logFile
    ? await Deno.open(options.logFile, { append: true, create: true })
    : undefined;
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      output += chunk;
      await log?.write(new TextEncoder().encode(chunk));
    }
  };
  const collecting = Promise.all([collect(child.stdout), collect(child.stderr)]);
  const status = collecting.then(() => {
    log?.close();
    return child.status;
  });
  const running: RunningVkubelet = {
    nodeName,
    port,
    pid: child.pid,
    kubeconfig,
    files: { cert: serving.certFile, key: serving.keyFile, providerConfig, podLogDir },
    output: () => output,
    status,
    async stop(signal: Deno.Signal = "SIGTERM") {
      const started = performance.now();
      try {
        child.kill(signal);
      } catch {
        // Already exited.
      }
      const { code } = await status;
      return { code, ms: performance.now() - started };
    },
  };
  if (options.waitReady ?? true) {
    const deadline = Date.now() + 30_000;
    let exited = false;
    status.then(() => exited = true);
    // Ready in the API may still be the previous process's; "vkubelet is ready" is this one's.
    while (
      !output.includes("vkubelet is ready") || (await nodeReady(cluster, nodeName)) !== "True"
    ) {
      if (exited || Date.now() > deadline) {
        await running.stop("SIGKILL");
        throw new Error(
          `vkubelet's node ${nodeName} was not Ready ${exited ? "(it exited)" : "after 30 s"}:\n` +
            output,
        );
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return running;
}
