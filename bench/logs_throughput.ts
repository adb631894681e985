/**
 * `kubectl logs` throughput through the real apiserver: a container whose log is 100 MB of
 * generated lines, read with the control plane's kubectl (apiserver -> kubelet API over TLS
 * with its kubelet client certificate), and, for comparison, read straight from the kubelet
 * API. Prints MB/s. Run: `deno run -A bench/logs_throughput.ts [MB]`.
 * @module
 */
import type { Provider } from "../provider/mod.ts";
import { useCluster } from "../tests/cluster/harness.ts";
import { call, startClusterServer } from "../tests/core/kubelet_api/_cluster_server.ts";
import { bindPod, registerNode } from "../tests/core/kubelet_api/_node.ts";

const megabytes = Number(Deno.args[0] ?? 100);
const total = megabytes * 1_000_000;
const say = (line: string) => Deno.stdout.writeSync(new TextEncoder().encode(line + "\n"));

/** Only logs: `total` bytes of numbered 100-byte lines, in 64 KiB chunks. */
function bulkLogs(): Provider {
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

const cluster = await useCluster();
const nodeName = `vk-bench-logs-${crypto.randomUUID().slice(0, 6)}`;
await using s = await startClusterServer(cluster, { nodeName, provider: bulkLogs() });
const unregister = await registerNode(cluster, nodeName, s.port);
const ns = await cluster.newNamespace("vk-bench");
try {
  await bindPod(cluster, s, ns, "bulk", nodeName);
  let started = performance.now();
  const direct = await call(s, `/containerLogs/${ns}/bulk/app`, {
    cert: {
      certFile: `${cluster.pkiDir}/apiserver-kubelet-client.crt`,
      keyFile: `${cluster.pkiDir}/apiserver-kubelet-client.key`,
    },
  });
  const directSeconds = (performance.now() - started) / 1000;
  say(
    `direct  : ${(direct.body.length / 1e6).toFixed(1)} MB in ${directSeconds.toFixed(2)} s = ${
      (direct.body.length / 1e6 / directSeconds).toFixed(1)
    } MB/s`,
  );

  started = performance.now();
  const child = new Deno.Command(cluster.binary, {
    args: ["kubectl", `--kubeconfig=${cluster.kubeconfigPath}`, "-n", ns, "logs", "bulk"],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let bytes = 0;
  for await (const chunk of child.stdout) bytes += chunk.length;
  const status = await child.status;
  await child.stderr.cancel();
  const seconds = (performance.now() - started) / 1000;
  say(
    `kubectl : ${(bytes / 1e6).toFixed(1)} MB in ${seconds.toFixed(2)} s = ${
      (bytes / 1e6 / seconds).toFixed(1)
    } MB/s (exit ${status.code})`,
  );
} finally {
  await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
  await unregister();
}
