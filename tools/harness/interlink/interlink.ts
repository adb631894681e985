/**
 * interLink's own API server (`github.com/interlink-hq/interlink/cmd/interlink`, at the version
 * this folder's go.mod names: the one the SLURM plugin's go.mod requires) for the interlink
 * provider's tests: built from Go modules once into `.cache/interlink-<version>/`, as
 * `tools/cluster/build.ts` builds the control plane, and started on loopback in front of a
 * plugin, with the YAML config it reads (`INTERLINKCONFIGPATH`).
 *
 * ```ts
 * await using server = await startInterlinkServer({ pluginUrl: "http://127.0.0.1:4000" });
 * // provider config: { target: "interlink", url: server.url }
 * ```
 * @module
 */
import { cacheDir } from "../../cluster/build.ts";
import { freePort } from "../../cluster/ports.ts";

const moduleDir = new URL(".", import.meta.url).pathname;
const PACKAGE = "github.com/interlink-hq/interlink/cmd/interlink";
const VK_PACKAGE = "github.com/interlink-hq/interlink/cmd/virtual-kubelet";

/** The interLink version go.mod pins (a pseudo-version). */
export function interlinkVersion(): string {
  const gomod = Deno.readTextFileSync(`${moduleDir}go.mod`);
  const match = gomod.match(/^\s*require github\.com\/interlink-hq\/interlink (v\S+)/m);
  if (!match) {
    throw new Error(`${moduleDir}go.mod does not require github.com/interlink-hq/interlink`);
  }
  return match[1];
}

/** Where the server binary is (or will be) built. */
function interlinkBinaryPath(): string {
  return `${cacheDir}/interlink-${interlinkVersion()}/interlink`;
}

/** Where interLink's own virtual kubelet (`cmd/virtual-kubelet`) is (or will be) built. */
export function interlinkVirtualKubeletPath(): string {
  return `${cacheDir}/interlink-${interlinkVersion()}/virtual-kubelet`;
}

/** Returns the path of interLink's API server, building it first (minutes on 2 cores) if needed. */
export function ensureInterlinkServer(
  options: { progress?: (line: string) => void } = {},
): Promise<string> {
  return ensureBuilt(PACKAGE, interlinkBinaryPath(), "API server", options);
}

/**
 * Returns the path of interLink's own virtual kubelet, building it first if needed (about as
 * long as the server: the two share most packages, so the second build reuses Go's cache).
 */
export function ensureInterlinkVirtualKubelet(
  options: { progress?: (line: string) => void } = {},
): Promise<string> {
  return ensureBuilt(VK_PACKAGE, interlinkVirtualKubeletPath(), "virtual kubelet", options);
}

async function ensureBuilt(
  pkg: string,
  path: string,
  what: string,
  options: { progress?: (line: string) => void },
): Promise<string> {
  try {
    await Deno.stat(path);
    return path;
  } catch {
    // Not built yet.
  }
  options.progress?.(
    `building interLink's ${what} ${interlinkVersion()} from Go modules; later runs reuse it`,
  );
  await Deno.mkdir(`${cacheDir}/interlink-${interlinkVersion()}`, { recursive: true });
  const tmp = `${path}.tmp-${Deno.pid}`;
  let output: Deno.CommandOutput;
  try {
    output = await new Deno.Command("go", {
      args: ["build", "-trimpath", "-ldflags", "-s -w", "-o", tmp, pkg],
      cwd: moduleDir,
      stdout: "inherit",
      stderr: "piped",
    }).output();
  } catch (err) {
    throw new Error("cannot run `go`: interLink is built from Go modules; put Go 1.26 on PATH", {
      cause: err,
    });
  }
  if (!output.success) {
    await Deno.remove(tmp).catch(() => {});
    const tail = new TextDecoder().decode(output.stderr).split("\n").slice(-20).join("\n");
    throw new Error(`go build of interLink's ${what} failed (exit ${output.code}):\n${tail}`);
  }
  await Deno.rename(tmp, path);
  return path;
}

/** Where to start the server. */
export interface InterlinkServerOptions {
  /**
   * The plugin's `http://127.0.0.1:<port>` (interLink's `SidecarURL` and `SidecarPort`), or
   * `unix:///path` for a plugin on a unix socket.
   */
  pluginUrl: string;
  /** Where its log goes; default discarded. */
  logFile?: string;
}

/** A running interLink API server. */
export interface InterlinkServer extends AsyncDisposable {
  /** `http://127.0.0.1:<port>`: the provider's `url` with `target: interlink`. */
  url: string;
  /** Its config file. */
  configFile: string;
  /** Stops it and removes its config. */
  stop(): Promise<void>;
}

/** Starts interLink's API server in front of a plugin; resolves once it answers a ping. */
export async function startInterlinkServer(
  options: InterlinkServerOptions,
): Promise<InterlinkServer> {
  const binary = await ensureInterlinkServer();
  const dir = await Deno.makeTempDir({ prefix: "vk-interlink-server-" });
  const port = freePort();
  const socket = options.pluginUrl.startsWith("unix://");
  const plugin = socket ? undefined : new URL(options.pluginUrl);
  // The keys of interLink's Config (pkg/interlink/config.go): the address and the port apart,
  // the plugin ("sidecar") likewise; DataRootFolder holds nothing the tests read.
  const configFile = `${dir}/InterLinkConfig.yaml`;
  await Deno.writeTextFile(
    configFile,
    [
      `InterlinkAddress: "http://127.0.0.1"`,
      `InterlinkPort: "${port}"`,
      `SidecarURL: "${plugin ? `http://${plugin.hostname}` : options.pluginUrl}"`,
      `SidecarPort: "${plugin?.port ?? ""}"`,
      `VerboseLogging: false`,
      `ErrorsOnlyLogging: false`,
      `DataRootFolder: "${dir}/data/"`,
      "",
    ].join("\n"),
  );
  const log = options.logFile
    ? await Deno.open(options.logFile, { create: true, append: true })
    : undefined;
  // interLink logs (logrus) to stderr. Its config path goes by environment: main parses the
  // flags first and knows only -version (cmd/interlink/main.go), so -interlinkconfigpath fails.
  const child = new Deno.Command(binary, {
    env: { INTERLINKCONFIGPATH: configFile },
    stdin: "null",
    stdout: "null",
    stderr: log ? "piped" : "null",
  }).spawn();
  const copy = log ? child.stderr.pipeTo(log.writable) : Promise.resolve();
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
    await child.status;
    await copy.catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  const deadline = Date.now() + 30_000;
  let exited: Deno.CommandStatus | undefined;
  child.status.then((status) => exited = status);
  while (true) {
    if (exited) {
      await stop();
      throw new Error(
        `interLink's API server exited with code ${exited.code} before it listened; start it with a logFile to see why`,
      );
    }
    try {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      conn.close();
      break;
    } catch {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`interLink's API server did not listen on ${url} within 30 s`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return { url, configFile, stop, [Symbol.asyncDispose]: stop };
}

/** How to start interLink's own virtual kubelet. */
export interface InterlinkVirtualKubeletOptions {
  /** Its node name (`-nodename`). */
  nodeName: string;
  /** interLink's API server, `http://127.0.0.1:<port>` ({@link InterlinkServer.url}). */
  serverUrl: string;
  /** The kubeconfig it runs with (`KUBECONFIG`): it lists pods, Secrets and ConfigMaps cluster-wide. */
  kubeconfig: string;
  /** The node's pod capacity (`Resources.Pods`); default 300. */
  pods?: number;
  /** Where its log goes; default discarded. */
  logFile?: string;
}

/** A running interLink virtual kubelet. */
export interface InterlinkVirtualKubelet extends AsyncDisposable {
  nodeName: string;
  /** Its kubelet API port on 127.0.0.1 (HTTPS, a self-signed certificate). */
  port: number;
  pid: number;
  /** Stops it (SIGKILL) and removes its config. */
  stop(): Promise<void>;
}

/**
 * Starts interLink's own virtual kubelet as a node of the control plane, on loopback: its config
 * YAML (pkg/virtualkubelet/config.go) names the server; the kubelet API's address, port and the
 * node's IP come from `KUBELET_URL`, `KUBELET_PORT` and `POD_IP` (cmd/virtual-kubelet/main.go:
 * getKubeletEndpoint and main), the config path and node name from `-configpath` and `-nodename`.
 * Its node turns Ready after its first ping of the server, 30 s after start
 * (pkg/virtualkubelet/virtualkubelet.go: nodeUpdate).
 */
export async function startInterlinkVirtualKubelet(
  options: InterlinkVirtualKubeletOptions,
): Promise<InterlinkVirtualKubelet> {
  const binary = await ensureInterlinkVirtualKubelet();
  const dir = await Deno.makeTempDir({ prefix: "vk-interlink-vk-" });
  const server = new URL(options.serverUrl);
  const configFile = `${dir}/InterLinkConfig.yaml`;
  await Deno.writeTextFile(
    configFile,
    [
      `InterlinkURL: "http://${server.hostname}"`,
      `InterlinkPort: "${server.port}"`,
      `VerboseLogging: false`,
      `ErrorsOnlyLogging: false`,
      `Resources:`,
      `  CPU: "64"`,
      `  Memory: "256Gi"`,
      `  Pods: "${options.pods ?? 300}"`,
      "",
    ].join("\n"),
  );
  const port = freePort();
  const log = options.logFile
    ? await Deno.open(options.logFile, { create: true, append: true })
    : undefined;
  const child = new Deno.Command(binary, {
    args: [`-nodename=${options.nodeName}`, `-configpath=${configFile}`],
    env: {
      KUBECONFIG: options.kubeconfig,
      KUBELET_URL: "127.0.0.1",
      KUBELET_PORT: String(port),
      POD_IP: "127.0.0.1",
    },
    stdin: "null",
    stdout: "null",
    // It logs (logrus) to stderr.
    stderr: log ? "piped" : "null",
  }).spawn();
  const copy = log ? child.stderr.pipeTo(log.writable) : Promise.resolve();
  const stop = async () => {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
    await child.status;
    await copy.catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  return {
    nodeName: options.nodeName,
    port,
    pid: child.pid,
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
