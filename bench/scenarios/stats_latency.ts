/**
 * `/stats/summary` latency with 1,000 pods in the mock provider: in-process (`app.request`)
 * and over TLS on 127.0.0.1 with the apiserver's kubelet client certificate (one keep-alive
 * connection). Prints the median, p95 and max of each, and the answer's size.
 * Run: `deno run -A bench/scenarios/stats_latency.ts [pods] [requests]`.
 * @module
 */
import { type TestCluster, useCluster } from "../../tools/cluster/harness.ts";
import { startClusterServer } from "../../tools/harness/cluster_server.ts";
import { NODE, setup, testPod } from "../../tools/harness/kubelet_api_fakes.ts";

/** Milliseconds of each request, and the size of one answer. */
export interface StatsTimes {
  times: number[];
  bytes: number;
}

/** `requests` reads of `/stats/summary` with `pods` pods, in-process and over TLS. */
export async function measureStats(
  cluster: TestCluster,
  options: { pods: number; requests: number },
): Promise<{ inProcess: StatsTimes; tls: StatsTimes }> {
  const pods = Array.from(
    { length: options.pods },
    (_, i) => testPod("bench", `pod-${i}`, ["a", "b"]),
  );
  const timed = async (get: () => Response | Promise<Response>): Promise<StatsTimes> => {
    const times: number[] = [];
    let bytes = 0;
    for (let i = 0; i < options.requests; i++) {
      const started = performance.now();
      const res = await get();
      bytes = (await res.arrayBuffer()).byteLength;
      times.push(performance.now() - started);
    }
    return { times, bytes };
  };
  let inProcess: StatsTimes;
  {
    await using t = await setup({ pods });
    inProcess = await timed(() => t.get("/stats/summary"));
  }
  await using s = await startClusterServer(cluster, { nodeName: NODE });
  for (const pod of pods) await s.mock.createPod(pod, {});
  using client = Deno.createHttpClient({
    caCerts: [s.caPem],
    cert: await Deno.readTextFile(`${cluster.pkiDir}/apiserver-kubelet-client.crt`),
    key: await Deno.readTextFile(`${cluster.pkiDir}/apiserver-kubelet-client.key`),
  });
  const tls = await timed(() => fetch(`${s.url}/stats/summary`, { client }));
  return { inProcess, tls };
}

if (import.meta.main) {
  const podCount = Number(Deno.args[0] ?? 1000);
  const requests = Number(Deno.args[1] ?? 50);
  const say = (line: string) => Deno.stdout.writeSync(new TextEncoder().encode(line + "\n"));
  const report = (label: string, { times, bytes }: StatsTimes) => {
    times.sort((a, b) => a - b);
    const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
    say(
      `${label}: median ${at(0.5).toFixed(1)} ms, p95 ${at(0.95).toFixed(1)} ms, max ${
        at(1).toFixed(1)
      } ms, ${(bytes / 1e6).toFixed(2)} MB per answer (${podCount} pods, ${requests} requests)`,
    );
  };
  const { inProcess, tls } = await measureStats(await useCluster(), {
    pods: podCount,
    requests,
  });
  report("in-process", inProcess);
  report("over TLS  ", tls);
}
