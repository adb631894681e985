/**
 * `kubectl logs` throughput through the real apiserver: a container whose log is `MB` of
 * generated 100-byte lines, read with the control plane's kubectl (apiserver -> kubelet API over
 * TLS with its kubelet client certificate), and, for comparison, read straight from the kubelet
 * API. Prints MB/s and lines/s. Run: `deno run -A bench/scenarios/logs_throughput.ts [MB] [--follow]`
 * (`--follow`: `kubectl logs -f` and `?follow=true`; the log still ends after MB).
 * @module
 */
import type { Provider } from "../../provider/mod.ts";
import { type TestCluster, useCluster } from "../../tools/cluster/harness.ts";
import { call, startClusterServer } from "../../tools/harness/cluster_server.ts";
import { bindPod, registerNode } from "../../tools/harness/node.ts";

const LINE_BYTES = 100;

/** Only logs: `total` bytes of numbered 100-byte lines, in 64 KiB chunks. */
function bulkLogs(total: number): Provider {
  const line = (n: number) => `line ${String(n).padStart(10, "0")} ${"x".repeat(83)}\n`;
  const done = () => Promise.resolve();
  return {
    createPod: done,
    updatePod: done,
    deletePod: done,
    getPod: () => Promise.resolve(undefined),
    listPods: () => Promise.resolve([]),
    getContainerLogs: () => {
      let sent = 0, n = 0;
      return Promise.resolve(
        new ReadableStream<Uint8Array>({
          pull(controller) {
            if (sent >= total) return controller.close();
            let text = "";
            while (text.length < 65_536 && sent + text.length < total) text += line(n++);
            const bytes = new TextEncoder().encode(text);
            sent += bytes.length;
            controller.enqueue(bytes);
          },
        }),
      );
    },
  };
}

/** One read of the whole log. */
export interface LogRead {
  bytes: number;
  lines: number;
  seconds: number;
}

/** Both reads of {@link measureLogs}. */
export interface LogsFigures {
  /** Straight from the kubelet API (HTTPS, the apiserver's client certificate). */
  direct: LogRead;
  /** `kubectl logs [-f]` through the apiserver. */
  kubectl: LogRead & { code: number };
}

/** Reads a `megabytes` log directly and through kubectl (`-f` when `follow`). */
export async function measureLogs(
  cluster: TestCluster,
  options: { megabytes: number; follow?: boolean },
): Promise<LogsFigures> {
  const total = options.megabytes * 1_000_000;
  const follow = options.follow ?? false;
  const nodeName = `vk-bench-logs-${crypto.randomUUID().slice(0, 6)}`;
  await using s = await startClusterServer(cluster, { nodeName, provider: bulkLogs(total) });
  const unregister = await registerNode(cluster, nodeName, s.port);
  const ns = await cluster.newNamespace("vk-bench");
  try {
    await bindPod(cluster, s, ns, "bulk", nodeName);
    let started = performance.now();
    const direct = await call(s, `/containerLogs/${ns}/bulk/app${follow ? "?follow=true" : ""}`, {
      cert: {
        certFile: `${cluster.pkiDir}/apiserver-kubelet-client.crt`,
        keyFile: `${cluster.pkiDir}/apiserver-kubelet-client.key`,
      },
    });
    const directSeconds = (performance.now() - started) / 1000;

    started = performance.now();
    const child = new Deno.Command(cluster.binary, {
      args: [
        "kubectl",
        `--kubeconfig=${cluster.kubeconfigPath}`,
        "-n",
        ns,
        "logs",
        ...(follow ? ["-f"] : []),
        "bulk",
      ],
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    let bytes = 0, lines = 0;
    for await (const chunk of child.stdout) {
      bytes += chunk.length;
      for (let at = chunk.indexOf(10); at >= 0; at = chunk.indexOf(10, at + 1)) lines++;
    }
    const status = await child.status;
    await child.stderr.cancel();
    return {
      direct: {
        bytes: direct.body.length,
        lines: Math.floor(direct.body.length / LINE_BYTES),
        seconds: directSeconds,
      },
      kubectl: { bytes, lines, seconds: (performance.now() - started) / 1000, code: status.code },
    };
  } finally {
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    await unregister();
  }
}

if (import.meta.main) {
  const say = (line: string) => Deno.stdout.writeSync(new TextEncoder().encode(line + "\n"));
  const megabytes = Number(Deno.args.find((a) => !a.startsWith("--")) ?? 100);
  const figures = await measureLogs(await useCluster(), {
    megabytes,
    follow: Deno.args.includes("--follow"),
  });
  const line = (read: LogRead) =>
    `${(read.bytes / 1e6).toFixed(1)} MB in ${read.seconds.toFixed(2)} s = ${
      (read.bytes / 1e6 / read.seconds).toFixed(1)
    } MB/s, ${(read.lines / read.seconds).toFixed(0)} lines/s`;
  say(`direct  : ${line(figures.direct)}`);
  say(`kubectl : ${line(figures.kubectl)} (exit ${figures.kubectl.code})`);
}
