/**
 * The three subjects the bench compares, each started as one process whose pid is the process
 * measured: vkubelet (`deno run main.ts`, mock provider), the peer (virtual-kubelet's CLI, mock
 * provider) and the floor (`bench/tools/floor.ts`). Same node name, capacity, identity, client-side
 * request limit and loopback addresses for all.
 * @module
 */
import type { KubeletIdentity } from "./control_plane.ts";
import { VKUBELET_PERMISSIONS } from "../../scripts/permissions.ts";

/** Which implementation runs the node. */
export type SubjectName = "vkubelet" | "peer" | "floor";
/** Every subject, in run order. */
export const SUBJECTS: readonly SubjectName[] = ["vkubelet", "peer", "floor"];

/** The node every subject registers. */
export const NODE_NAME = "vkbench-node";
/** The node's capacity, for both mocks and the floor. */
export const CAPACITY = { cpu: "1000", memory: "4Ti", pods: "20000" } as const;

/** How to start one subject. */
export interface SubjectSpec {
  name: SubjectName;
  identity: KubeletIdentity;
  server: string;
  workDir: string;
  /** The peer's binary (for the peer). */
  peerBinary?: string;
  /** Client-side request limit for both kubelets; undefined keeps each one's shipped default. */
  qps?: number;
  /** The kubelet API port. */
  port: number;
  logFile: string;
  /** The node name (default {@link NODE_NAME}); the soak on a shared cluster uses its own. */
  nodeName?: string;
  /** Extra vkubelet flags (the soak's `--metrics-addr`). */
  extraArgs?: string[];
}

/** A started subject process. */
export interface RunningSubject {
  pid: number;
  /** Lines the process prints on stdout (the floor's `reconciled N`), and vkubelet's log lines. */
  lines: string[];
  exited: Promise<Deno.CommandStatus>;
  /** Set once the process has exited (crashed, when nobody stopped it). */
  exitCode?: number;
  stop(): Promise<void>;
}

const repoRoot = new URL("../../", import.meta.url).pathname;

/**
 * `--inspect=127.0.0.1:PORT` when VKBENCH_INSPECT names a loopback port (for bench/tools/profile.ts and
 * bench/tools/heap.ts), else nothing; throws a RangeError for any other address.
 */
export function inspectFlags(): string[] {
  const inspect = Deno.env.get("VKBENCH_INSPECT");
  if (inspect && !/^127\.0\.0\.1:\d+$/.test(inspect)) {
    throw new RangeError(
      "VKBENCH_INSPECT must be 127.0.0.1:PORT (the inspector stays on loopback)",
    );
  }
  return inspect ? [`--inspect=${inspect}`] : [];
}

/**
 * The shipped `deno run` flags (scripts/permissions.ts); for side runs, `VKBENCH_V8_FLAGS`
 * replaces the shipped `--v8-flags` (empty: V8's defaults).
 */
export function shippedFlags(): string[] {
  const v8 = Deno.env.get("VKBENCH_V8_FLAGS");
  if (v8 === undefined) return [...VKUBELET_PERMISSIONS];
  const others = VKUBELET_PERMISSIONS.filter((flag) => !flag.startsWith("--v8-flags"));
  return v8 ? [...others, `--v8-flags=${v8}`] : others;
}

function command(
  spec: SubjectSpec,
  providerConfig: string,
): [string, string[], Record<string, string>] {
  const { identity: id } = spec;
  const nodeName = spec.nodeName ?? NODE_NAME;
  const qps = spec.qps === undefined ? [] : [String(spec.qps), String(spec.qps * 2)];
  const inspect = inspectFlags();
  switch (spec.name) {
    case "vkubelet":
      return [Deno.execPath(), [
        "run",
        ...shippedFlags(),
        ...inspect,
        `${repoRoot}main.ts`,
        "--nodename",
        nodeName,
        "--provider",
        "mock",
        "--provider-config",
        providerConfig,
        "--kubeconfig",
        id.kubeconfig,
        "--node-ip",
        "127.0.0.1",
        "--listen-address",
        "127.0.0.1",
        "--port",
        String(spec.port),
        "--tls-cert-file",
        id.servingCert,
        "--tls-private-key-file",
        id.servingKey,
        "--client-ca-file",
        id.ca,
        // Info, not warn: the restart scenario reads the "start-up synced" line (a handful of
        // lines per run; nothing per pod is logged at info).
        "--log-level",
        "info",
        ...(qps.length ? ["--kube-api-qps", qps[0], "--kube-api-burst", qps[1]] : []),
        ...(spec.extraArgs ?? []),
        // For experiments only (e.g. "--pod-sync-workers 32"); a reported run leaves it unset.
        ...(Deno.env.get("VKBENCH_VKUBELET_ARGS")?.split(" ").filter(Boolean) ?? []),
      ], {}];
    case "peer":
      return [spec.peerBinary!, [
        "--nodename",
        nodeName,
        "--provider",
        "mock",
        "--provider-config",
        providerConfig,
        "--kubeconfig",
        id.kubeconfig,
        "--log-level",
        "warn",
        "--klog.v",
        "0",
      ], {
        KUBELET_PORT: String(spec.port),
        VKUBELET_POD_IP: "127.0.0.1",
        APISERVER_CERT_LOCATION: id.servingCert,
        APISERVER_KEY_LOCATION: id.servingKey,
        APISERVER_CA_CERT_LOCATION: id.ca,
        ...(qps.length ? { VKBENCH_KUBE_API_QPS: qps[0], VKBENCH_KUBE_API_BURST: qps[1] } : {}),
      }];
    case "floor":
      return [Deno.execPath(), [
        "run",
        "-A",
        // The floor is a Deno program too: the V8 flags of a side run apply to it as well.
        ...shippedFlags().filter((flag) => flag.startsWith("--v8-flags")),
        `${repoRoot}bench/tools/floor.ts`,
        JSON.stringify({
          server: spec.server,
          ca: id.ca,
          cert: id.clientCert,
          key: id.clientKey,
          nodeName,
          capacity: CAPACITY,
          concurrency: 32,
        }),
      ], {}];
  }
}

/** Starts a subject; its stderr (and stdout) are appended to `spec.logFile`. */
export async function startSubject(spec: SubjectSpec): Promise<RunningSubject> {
  await Deno.mkdir(spec.workDir, { recursive: true });
  const providerConfig = `${spec.workDir}/mock.json`;
  // virtual-kubelet's mock format; vkubelet's mock accepts it as well.
  await Deno.writeTextFile(
    providerConfig,
    JSON.stringify({ [spec.nodeName ?? NODE_NAME]: CAPACITY }),
  );
  const [cmd, args, env] = command(spec, providerConfig);
  const log = await Deno.open(spec.logFile, { create: true, append: true });
  const child = new Deno.Command(cmd, {
    args,
    env,
    cwd: repoRoot,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  const copy = async (stream: ReadableStream<Uint8Array>, keep: boolean) => {
    let buffer = "";
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      await log.write(new TextEncoder().encode(chunk));
      if (!keep) continue;
      buffer += chunk;
      const parts = buffer.split("\n");
      buffer = parts.pop()!;
      lines.push(...parts);
    }
  };
  const copied = Promise.all([
    copy(child.stdout, true),
    copy(child.stderr, spec.name === "vkubelet"),
  ]);
  const exited = child.status.then(async (status) => {
    await copied.catch(() => {});
    log.close();
    return status;
  });
  const subject: RunningSubject = {
    pid: child.pid,
    lines,
    exited,
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch {
        // Already gone.
      }
      const timer = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch {
          // Already gone.
        }
      }, 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
  exited.then((status) => subject.exitCode = status.code);
  return subject;
}
