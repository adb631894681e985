/**
 * `deno task bench --streaming`: issue 22's streaming figures, each side by side with a direct
 * path on the same machine, on the running default control plane (loopback only):
 *
 * - vkubelet (`main.ts`, process provider) runs one pod, bench/tools/stream_server.ts, an echo server
 *   on a loopback port;
 * - `kubectl exec -- true` round trips (p50/p99) against spawning `true` here;
 * - `kubectl exec -i … -- cat` of `--mb` MB against piping it through a local `cat`;
 * - `kubectl port-forward` echo of `--mb` MB against dialling the pod's server directly;
 * - `kubectl logs -f` lines/s and `/stats/summary` latency with `--pods` pods, from
 *   bench/scenarios/logs_throughput.ts and bench/scenarios/stats_latency.ts.
 *
 * Prints a table and writes bench/reports/STREAMING.md (raw figures in bench/out/streaming.json). With
 * `VKBENCH_INSPECT=127.0.0.1:PORT`, vkubelet opens V8's inspector for bench/tools/profile.ts.
 * @module
 */
import { readState } from "../../tools/cluster/cluster.ts";
import { type TestCluster, useCluster } from "../../tools/cluster/harness.ts";
import { startVkubelet } from "../../tools/cluster/vkubelet.ts";
import { clusterKubectl } from "../../tools/harness/streaming_e2e.ts";
import { execRoundTrips } from "./exec_latency.ts";
import { measureLogs } from "./logs_throughput.ts";
import { machine } from "../tools/proc.ts";
import { profileDuring } from "../tools/profile.ts";
import { measureStats } from "./stats_latency.ts";
import {
  cpuOf,
  cpuOfTree,
  echo,
  pipeFile,
  randomFile,
  withPortForward,
} from "../tools/stream_transfer.ts";
import { parseStreamingFlags, type StreamingFlags } from "../tools/streaming_flags.ts";
import { renderStreaming, type StreamingResult, type Transfer } from "../tools/streaming_report.ts";

const benchDir = new URL("../", import.meta.url).pathname;
const NODE = "vkbench-stream";
const POD_SERVER = "echo server (pod)";

type Say = (line: string) => void;
/** pid of each process whose CPU a transfer counts. */
type Watched = Record<string, number | "self">;

/** Runs `work` `repeat` times; CPU seconds per watched process over all of them. */
async function timedTransfer(
  bytes: number,
  repeat: number,
  watched: Watched,
  work: () => Promise<number>,
): Promise<Transfer> {
  // The pod's processes are vkubelet's descendants: count them once, on their own row.
  const exclude = typeof watched[POD_SERVER] === "number" ? [watched[POD_SERVER] as number] : [];
  const read = () =>
    Object.fromEntries(
      Object.entries(watched).map((
        [name, pid],
      ) => [name, pid === "self" ? cpuOf(pid) : { own: cpuOfTree(pid, exclude), children: 0 }]),
    );
  const before = read();
  const ms: number[] = [];
  for (let i = 0; i < repeat; i++) ms.push(await work());
  const after = read();
  const cpu: Record<string, number> = {};
  for (const [name, pid] of Object.entries(watched)) {
    const [a, b] = [after[name], before[name]];
    if (pid === "self") {
      cpu.bench = a.own - b.own;
      cpu["kubectl or cat (the bench's children)"] = a.children - b.children;
    } else cpu[name] = a.own + a.children - (b.own + b.children);
  }
  for (const k of Object.keys(cpu)) cpu[k] = Math.round(cpu[k] * 100) / 100;
  return { bytes, ms, cpu };
}

/** The echo pod: where it is, and where its server listens. */
interface EchoPod {
  namespace: string;
  podName: string;
  port: number;
  /** DENO_DIR of its deno. */
  denoDir: string;
}

/** Creates the echo pod and waits for its server; resolves with the server's pid. */
async function startEchoPod(cluster: TestCluster, pod: EchoPod): Promise<number> {
  const { port } = pod;
  const kubectl = cluster.kubectlIn(pod.namespace);
  await kubectl(
    ["apply", "-f", "-"],
    JSON.stringify({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: pod.podName },
      spec: {
        nodeSelector: { "kubernetes.io/hostname": NODE },
        tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
        automountServiceAccountToken: false,
        containers: [{
          name: "server",
          image: "deno",
          command: [
            Deno.execPath(),
            "run",
            "--allow-net=127.0.0.1",
            `${benchDir}tools/stream_server.ts`,
            String(port),
          ],
          env: [{ name: "DENO_DIR", value: pod.denoDir }],
        }],
      },
    }),
  );
  await kubectl(["wait", "--for=condition=Ready", `pod/${pod.podName}`, "--timeout=60s"]);
  const id = await kubectl([
    "get",
    "pod",
    pod.podName,
    "-o",
    "jsonpath={.status.containerStatuses[0].containerID}",
  ]);
  const pid = Number(/process:\/\/(\d+)\./.exec(id)?.[1]);
  if (!(pid > 0)) throw new Error(`the echo pod's containerID ${id} names no process`);
  for (let tries = 0;; tries++) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      return pid;
    } catch (err) {
      if (tries > 100) throw new Error(`the echo pod does not listen on ${port}: ${err}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

async function measureStreams(
  cluster: TestCluster,
  flags: StreamingFlags,
  { say, outDir }: { say: Say; outDir: string },
): Promise<Omit<StreamingResult, "startedAt" | "finishedAt" | "load" | "machine" | "flags">> {
  const stateDir = await Deno.makeTempDir({ prefix: "vkbench-stream-" });
  const inspect = Deno.env.get("VKBENCH_INSPECT");
  if (inspect && !/^127\.0\.0\.1:\d+$/.test(inspect)) {
    throw new RangeError(
      "VKBENCH_INSPECT must be 127.0.0.1:PORT (the inspector stays on loopback)",
    );
  }
  const vk = await startVkubelet(cluster, {
    nodeName: NODE,
    provider: "process",
    providerConfig: JSON.stringify({ stateDir, cgroups: "off", mountNamespace: "off" }),
    denoArgs: inspect ? [`--inspect=${inspect}`] : [],
  }).catch(async (err) => {
    await Deno.remove(stateDir, { recursive: true }).catch(() => {});
    throw err;
  });
  const file = await randomFile(flags.mb * 1e6);
  const pod: EchoPod = {
    namespace: await cluster.newNamespace("vkbench-stream"),
    podName: "echo",
    port: 20000 + Math.floor(Math.random() * 10000),
    denoDir: `${stateDir}/deno`,
  };
  const { port } = pod;
  try {
    const serverPid = await startEchoPod(cluster, pod);
    const apiserver = readState()?.components["kube-apiserver"].pid;
    if (!apiserver) throw new Error("no apiserver pid in the cluster's state: is it up?");
    const watched: Watched = { self: "self", apiserver, vkubelet: vk.pid };
    const kubectl = clusterKubectl(cluster);
    const declared = await cluster.kubectl(
      ["get", "node", NODE, "-o", "jsonpath={.status.declaredFeatures}"],
    );
    // With ExtendWebSocketsToKubelet declared the apiserver passes kubectl's WebSocket through.
    const protocol = declared.stdout.includes("ExtendWebSocketsToKubelet")
      ? "WebSocket to vkubelet (the node declares ExtendWebSocketsToKubelet)"
      : "SPDY to vkubelet";
    const bytes = flags.mb * 1e6;

    say(`exec -- true round trips (${flags.runs} each)`);
    const direct: number[] = [];
    for (let i = 0; i < flags.runs; i++) direct.push((await pipeFile(["true"], "/dev/null")).ms);
    const roundTrip = { kubectl: await execRoundTrips(kubectl, pod, flags.runs), direct };

    say(`exec -i cat of ${flags.mb} MB (${flags.repeat} each)`);
    const piped = (argv: string[]) => async () => {
      const out = await pipeFile(argv, file);
      if (out.code !== 0 || out.bytes !== bytes) {
        throw new Error(`${argv.join(" ")} returned ${out.bytes} of ${bytes} bytes: ${out.stderr}`);
      }
      return out.ms;
    };
    const execArgv = [...kubectl.argv, "-n", pod.namespace, "exec", "-i", pod.podName, "--", "cat"];
    const execCat = {
      direct: await timedTransfer(bytes, flags.repeat, watched, piped(["cat"])),
      kubectl: await timedTransfer(bytes, flags.repeat, watched, piped(execArgv)),
    };

    say(`port-forward echo of ${flags.mb} MB (${flags.repeat} each)`);
    const withServer = { ...watched, [POD_SERVER]: serverPid };
    const portForward = {
      direct: await timedTransfer(bytes, flags.repeat, withServer, () => echo(port, bytes)),
      kubectl: await timedTransfer(
        bytes,
        flags.repeat,
        withServer,
        () => withPortForward(kubectl.argv, pod, port, (local) => echo(local, bytes)),
      ),
    };
    if (inspect) {
      const inspector = Number(inspect.split(":")[1]);
      const lines: string[] = [];
      for (
        const [name, work] of [
          ["exec", piped(execArgv)],
          ["port-forward", () => withPortForward(kubectl.argv, pod, port, (l) => echo(l, bytes))],
        ] as const
      ) {
        say(`profiling vkubelet during one ${name} transfer`);
        const out = `${outDir}/streaming-${name}.cpuprofile`;
        const { result: ms, summary } = await profileDuring(inspector, out, work);
        lines.push(`## ${name}: ${bytes / 1e6} MB in ${ms.toFixed(0)} ms (${out})`, ...summary, "");
      }
      await Deno.writeTextFile(`${outDir}/streaming-profile.txt`, lines.join("\n"));
      say(`wrote ${outDir}/streaming-profile.txt`);
    }
    return {
      roundTrip,
      execCat,
      portForward,
      profiled: Boolean(inspect),
      protocol: `kubectl ${await kubectlVersion(
        kubectl.argv,
      )}: WebSocket to the apiserver, ${protocol}`,
      ...await logsAndStats(cluster, flags, say),
    };
  } finally {
    await cluster.kubectl(["delete", "namespace", pod.namespace, "--wait=true", "--timeout=60s"]);
    await vk.stop("SIGTERM");
    await cluster.kubectl(["delete", "node", NODE, "--wait=false"]);
    await Deno.remove(file);
    await Deno.remove(stateDir, { recursive: true }).catch(() => {});
  }
}

async function kubectlVersion(argv: string[]): Promise<string> {
  const out = await new Deno.Command(argv[0], {
    args: [...argv.slice(1), "version", "--client", "-o", "json"],
    stdout: "piped",
    stderr: "null",
  }).output();
  try {
    return JSON.parse(new TextDecoder().decode(out.stdout)).clientVersion.gitVersion;
  } catch {
    return "(version unknown)";
  }
}

async function logsAndStats(cluster: TestCluster, flags: StreamingFlags, say: Say) {
  say(`logs -f of ${flags.logMb} MB`);
  const logs = await measureLogs(cluster, { megabytes: flags.logMb, follow: true });
  if (logs.kubectl.code !== 0 || logs.kubectl.bytes !== logs.direct.bytes) {
    throw new Error(`kubectl logs -f read ${logs.kubectl.bytes} of ${logs.direct.bytes} bytes`);
  }
  say(`/stats/summary with ${flags.pods} pods (${flags.requests} requests each)`);
  const stats = await measureStats(cluster, { pods: flags.pods, requests: flags.requests });
  return { logs, stats: { kubectl: stats.tls, direct: stats.inProcess } };
}

/** The `--streaming` mode of `deno task bench`; resolves with the exit code. */
export async function main(args: string[]): Promise<number> {
  const say: Say = (line) =>
    Deno.stderr.writeSync(new TextEncoder().encode(`[bench streaming] ${line}\n`));
  let flags: StreamingFlags;
  try {
    flags = parseStreamingFlags(args);
  } catch (err) {
    say((err as Error).message);
    return 2;
  }
  const sideDir = Deno.env.get("VKBENCH_OUT");
  const outDir = sideDir ?? `${benchDir}out`;
  const reportFile = sideDir ? `${sideDir}/STREAMING.md` : `${benchDir}reports/STREAMING.md`;
  await Deno.mkdir(outDir, { recursive: true });
  const resultFile = `${outDir}/streaming.json`;
  if (!flags.reportOnly) {
    const m = machine();
    const startedAt = new Date().toISOString();
    const before = m.load;
    const measured = await measureStreams(await useCluster(), flags, { say, outDir });
    const { reportOnly: _, ...sizes } = flags;
    const result: StreamingResult = {
      startedAt,
      finishedAt: new Date().toISOString(),
      load: { before, after: machine().load },
      machine: `${m.cores} cores (${m.cpuModel}), ${m.memoryGiB} GiB`,
      flags: sizes,
      ...measured,
    };
    await Deno.writeTextFile(resultFile, JSON.stringify(result, null, 2));
  }
  const result: StreamingResult = JSON.parse(await Deno.readTextFile(resultFile));
  const notes = await Deno.readTextFile(`${benchDir}reports/streaming_notes.md`).catch(() => "");
  await Deno.writeTextFile(reportFile, renderStreaming(result, notes));
  await new Deno.Command(Deno.execPath(), { args: ["fmt", "-q", reportFile] }).output();
  Deno.stdout.writeSync(new TextEncoder().encode(await Deno.readTextFile(reportFile)));
  say(`wrote ${reportFile}`);
  return 0;
}
