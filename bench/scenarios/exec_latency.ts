/**
 * `deno run -A bench/scenarios/exec_latency.ts [--runs=20] [--mb=64]`: the streaming path through the
 * REAL apiserver to our kubelet API server and the mock provider, measured with kubectl:
 *
 * - `kubectl exec pod -- true` round trip, median (and p90) of `--runs`;
 * - bulk exec: `kubectl exec -i pod -- cat` of `--mb` MiB, in MB/s (counted once, one way);
 * - port-forward: one connection echoing `--mb` MiB, and 10 parallel connections of a tenth
 *   each, in MB/s of payload (one way).
 *
 * Each for the control plane's kubectl (WebSocket to the apiserver, SPDY to us), Debian's
 * kubectl 1.20 when present (SPDY end to end; `VKUBELET_KUBECTL_1_20` names its binary), and
 * the control plane's kubectl with the node declaring ExtendWebSocketsToKubelet (WebSocket to
 * us). Brings the local cluster up if needed (`deno task cluster down` stops it).
 * @module
 */
import { parseArgs } from "node:util";
import { useCluster } from "../../tools/cluster/harness.ts";
import { EXTEND_WEBSOCKETS_TO_KUBELET } from "../../core/kubelet_api/streaming/declared_features.ts";
import {
  clusterKubectl,
  debianKubectl,
  type Kubectl,
  runKubectl,
  startVirtualNode,
  type VirtualNode,
} from "../../tools/harness/streaming_e2e.ts";
import { echo, quantile, withPortForward } from "../tools/stream_transfer.ts";

const MB = 1e6;
const say = (line: string) => Deno.stdout.writeSync(new TextEncoder().encode(line + "\n"));

/** Milliseconds of each of `runs` `kubectl exec POD -- true`, run one after the other. */
export async function execRoundTrips(
  kubectl: Kubectl,
  pod: { namespace: string; podName: string },
  runs: number,
): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const out = await runKubectl(kubectl, ["-n", pod.namespace, "exec", pod.podName, "--", "true"]);
    if (out.code !== 0) throw new Error(`kubectl exec failed: ${out.stderr}`);
    samples.push(performance.now() - started);
  }
  return samples;
}

async function execThroughput(kubectl: Kubectl, node: VirtualNode, file: string, bytes: number) {
  const started = performance.now();
  const out = await runKubectl(
    kubectl,
    ["-n", node.namespace, "exec", "-i", node.podName, "--", "cat"],
    { stdinFile: file },
  );
  const seconds = (performance.now() - started) / 1000;
  if (out.code !== 0 || out.stdout.length !== bytes) {
    throw new Error(`exec cat returned ${out.stdout.length} bytes: ${out.stderr}`);
  }
  return bytes / MB / seconds;
}

function portForwardThroughput(kubectl: Kubectl, node: VirtualNode, bytes: number) {
  return withPortForward(kubectl.argv, node, 8080, async (port) => {
    const single = bytes / MB / (await echo(port, bytes) / 1000);
    const started = performance.now();
    await Promise.all(Array.from({ length: 10 }, () => echo(port, Math.floor(bytes / 10))));
    const parallel = (Math.floor(bytes / 10) * 10) / MB / ((performance.now() - started) / 1000);
    return { single, parallel };
  });
}

async function measure(
  label: string,
  kubectl: Kubectl,
  node: VirtualNode,
  file: string,
  { runs, mib }: { runs: number; mib: number },
) {
  const bytes = mib * 1024 * 1024;
  const samples = await execRoundTrips(kubectl, node, runs);
  const exec = await execThroughput(kubectl, node, file, bytes);
  const forward = await portForwardThroughput(kubectl, node, bytes);
  say(
    `${label.padEnd(44)} exec true median ${quantile(samples, 0.5).toFixed(0)} ms ` +
      `(p90 ${quantile(samples, 0.9).toFixed(0)} ms, n=${runs}) | exec cat ${
        exec.toFixed(0)
      } MB/s | ` +
      `port-forward 1 conn ${forward.single.toFixed(0)} MB/s, 10 conns ${
        forward.parallel.toFixed(0)
      } MB/s`,
  );
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { runs: { type: "string", default: "20" }, mb: { type: "string", default: "64" } },
  });
  const sizes = { runs: Number(values.runs), mib: Number(values.mb) };
  const { mib } = sizes;
  const cluster = await useCluster();
  await using node = await startVirtualNode(cluster);
  const file = await Deno.makeTempFile({ prefix: "vk-bench-" });
  try {
    const data = new Uint8Array(mib * 1024 * 1024);
    for (let at = 0; at < data.length; at += 65536) {
      crypto.getRandomValues(data.subarray(at, at + 65536));
    }
    await Deno.writeFile(file, data);
    say(`payload ${mib} MiB; MB = 10^6 bytes, one way`);
    await measure(
      "kubectl 1.37 -> apiserver (WS) -> SPDY",
      clusterKubectl(cluster),
      node,
      file,
      sizes,
    );
    const old = await debianKubectl(cluster);
    if (old) await measure("kubectl 1.20 -> apiserver -> SPDY", old, node, file, sizes);
    else say("kubectl 1.20: not installed (set VKUBELET_KUBECTL_1_20), skipped");
    const kept = await node.declareFeatures([EXTEND_WEBSOCKETS_TO_KUBELET]);
    if (kept?.includes(EXTEND_WEBSOCKETS_TO_KUBELET)) {
      await measure(
        "kubectl 1.37 -> apiserver -> WebSocket",
        clusterKubectl(cluster),
        node,
        file,
        sizes,
      );
    } else {
      say("the apiserver drops status.declaredFeatures: WebSocket pass-through not measured");
    }
    say(`sessions by protocol: ${JSON.stringify(node.handler.sessionCounts)}`);
  } finally {
    await Deno.remove(file);
  }
}
