/**
 * `kubectl top` for a vkubelet node through the real metrics-server: metrics-server scrapes
 * vkubelet's `/metrics/resource` with its own service-account token (TokenReview, then a
 * SubjectAccessReview for nodes/metrics), verifies its serving certificate against the cluster
 * CA, and the aggregator proxies `metrics.k8s.io` to it.
 */
import assert from "node:assert/strict";
import { type TestCluster, useCluster, useMetricsServer } from "../../../tools/cluster/harness.ts";
import {
  type DecodedScrape,
  decodeScrape,
  usageProblems,
} from "../../../tools/cluster/resource_metrics.ts";
import { startVkubelet } from "../../../tools/cluster/vkubelet.ts";
import { eventually } from "../../../tools/harness/wait.ts";

const unique = (prefix: string) => `${prefix}-${crypto.randomUUID().slice(0, 6)}`;

/** Millicores from a `kubectl top` CPU column ("250m", "1"). */
function millicores(text: string): number {
  return text.endsWith("m") ? Number(text.slice(0, -1)) : Number(text) * 1000;
}

/** Mebibytes from a `kubectl top` memory column ("64Mi", "1Gi"). */
function mebibytes(text: string): number {
  const units: Record<string, number> = { Ki: 1 / 1024, Mi: 1, Gi: 1024 };
  const match = text.match(/^(\d+)(Ki|Mi|Gi)$/);
  return match ? Number(match[1]) * units[match[2]] : NaN;
}

/** Rows of `kubectl top ... --no-headers`, split on blanks; undefined when it failed. */
async function top(cluster: TestCluster, args: string[]): Promise<string[][] | undefined> {
  const res = await cluster.kubectl(["top", ...args, "--no-headers"]);
  if (res.code !== 0) return undefined;
  return res.stdout.trim().split("\n").filter(Boolean).map((l) => l.trim().split(/\s+/));
}

/** Scrapes vkubelet's /metrics/resource as metrics-server does, with its token. */
async function scrape(cluster: TestCluster, port: number): Promise<DecodedScrape> {
  const kubeconfig = await Deno.readTextFile(`${cluster.pkiDir}/../metrics-server.kubeconfig`);
  const token = kubeconfig.match(/token: (\S+)\}/)?.[1];
  assert.ok(token, "metrics-server's kubeconfig holds a token");
  const client = Deno.createHttpClient({
    caCerts: [await Deno.readTextFile(`${cluster.pkiDir}/ca.crt`)],
  });
  try {
    const requestTime = Date.now();
    const res = await fetch(`https://127.0.0.1:${port}/metrics/resource`, {
      client,
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    return decodeScrape(text, requestTime);
  } finally {
    client.close();
  }
}

async function metricsServerLog(log: string): Promise<string> {
  const text = await Deno.readTextFile(log).catch(() => "");
  return text.split("\n").filter((l) => /^[EW]\d/.test(l)).slice(-10).join("\n");
}

Deno.test("metrics-server is registered through the aggregator with a caBundle and answers", async () => {
  const cluster = await useCluster();
  await useMetricsServer();
  const service = JSON.parse(
    (await cluster.kubectl(["get", "apiservice", "v1beta1.metrics.k8s.io", "-o", "json"])).stdout,
  );
  assert.equal(service.spec.insecureSkipTLSVerify, undefined);
  assert.ok(service.spec.caBundle);
  assert.ok(
    service.status.conditions.some((c: { type: string; status: string }) =>
      c.type === "Available" && c.status === "True"
    ),
  );
  const svc = JSON.parse(
    (await cluster.kubectl(["-n", "kube-system", "get", "service", "metrics-server", "-o", "json"]))
      .stdout,
  );
  assert.equal(svc.spec.type, "ExternalName");
  assert.equal(svc.spec.externalName, "localhost");
  const nodes = await cluster.kubectl(["get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes"]);
  assert.equal(nodes.code, 0, nodes.stderr);
  assert.equal(JSON.parse(nodes.stdout).kind, "NodeMetricsList");
});

Deno.test("kubectl top node and top pod show a vkubelet node and its pods within two scrapes", async () => {
  const cluster = await useCluster();
  const metricsServer = await useMetricsServer();
  const nodeName = unique("vk-top");
  const vk = await startVkubelet(cluster, {
    nodeName,
    providerConfig: "usage: {cpu: 250m, memory: 64Mi}\nnodeUsage: {cpu: 50m, memory: 128Mi}\n",
  });
  const ns = await cluster.newNamespace("top");
  try {
    const pod = (name: string, containers: string[]) => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace: ns },
      spec: {
        nodeName,
        tolerations: [{ operator: "Exists" }],
        containers: containers.map((c) => ({ name: c, image: "registry.invalid/app:1" })),
      },
    });
    const created = await cluster.kubectl(["apply", "-f", "-"], {
      stdin: JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: [pod("solo", ["app"]), pod("pair", ["app", "proxy"])],
      }),
    });
    assert.equal(created.code, 0, created.stderr);
    await eventually("both pods Running", async () => {
      const res = await cluster.kubectl([
        "-n",
        ns,
        "get",
        "pods",
        "-o",
        "jsonpath={.items[*].status.phase}",
      ]);
      return res.stdout.trim() === "Running Running" ? true : undefined;
    }, 30_000);
    const runningAt = performance.now();

    // What metrics-server reads, checked with its own rules so that a failure says why.
    const first = await scrape(cluster, vk.port);
    await new Promise((r) => setTimeout(r, 1100));
    const second = await scrape(cluster, vk.port);
    assert.deepEqual([...first.problems, ...second.problems], []);
    assert.deepEqual(usageProblems(first, second), []);
    assert.deepEqual([...second.pods.keys()].sort(), [`${ns}/pair`, `${ns}/solo`]);

    const interval = metricsServer.resolutionSeconds * 1000;
    const pods = await eventually("both pods in kubectl top pod", async () => {
      const rows = await top(cluster, ["pod", "-n", ns]);
      return rows?.length === 2 ? rows : undefined;
    }, 4 * interval).catch(async (err) => {
      throw new Error(
        `${err.message}; metrics-server says:\n${await metricsServerLog(metricsServer.log)}`,
      );
    });
    const firstLineMs = performance.now() - runningAt;
    console.log(`first kubectl top pod line ${(firstLineMs / 1000).toFixed(1)} s after Running`);
    // Two points per container are needed: the first scrape after Running and the next one.
    // A scrape is stored once every node has answered or timed out (half the interval here), and
    // other tests leave dead nodes behind.
    assert.ok(firstLineMs < 2.5 * interval + 5_000, `${firstLineMs} ms`);
    const byName = Object.fromEntries(pods.map(([name, cpu, memory]) => [name, { cpu, memory }]));
    for (const [name, containers] of [["solo", 1], ["pair", 2]] as const) {
      assert.ok(Math.abs(millicores(byName[name].cpu) - 250 * containers) <= 5, byName[name].cpu);
      assert.equal(mebibytes(byName[name].memory), 64 * containers);
    }
    const perContainer = await top(cluster, ["pod", "pair", "-n", ns, "--containers"]);
    assert.deepEqual(perContainer?.map((row) => row[1]).sort(), ["app", "proxy"]);

    // The node: its own 50m/128Mi plus its pods' 3 × 250m/64Mi, once a whole window has them.
    const node = await eventually("the node at 800m in kubectl top node", async () => {
      const rows = await top(cluster, ["node", nodeName]);
      const row = rows?.[0];
      return row && Math.abs(millicores(row[1]) - 800) <= 8 ? row : undefined;
    }, 3 * interval);
    assert.equal(node[0], nodeName);
    assert.equal(mebibytes(node[3]), 128 + 3 * 64);
    assert.match(node[2], /^\d+%$/);
  } finally {
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    await vk.stop();
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
  }
});

Deno.test("a HorizontalPodAutoscaler reads the CPU utilisation of pods on a vkubelet node", async () => {
  const cluster = await useCluster();
  const metricsServer = await useMetricsServer();
  const nodeName = unique("vk-hpa");
  const vk = await startVkubelet(cluster, {
    nodeName,
    providerConfig: "usage: {cpu: 250m, memory: 64Mi}\n",
  });
  const ns = await cluster.newNamespace("hpa");
  try {
    const labels = { app: "web" };
    const created = await cluster.kubectl(["apply", "-f", "-"], {
      stdin: JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: [{
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: "web", namespace: ns },
          spec: {
            replicas: 2,
            selector: { matchLabels: labels },
            template: {
              metadata: { labels },
              spec: {
                nodeName,
                tolerations: [{ operator: "Exists" }],
                containers: [{
                  name: "app",
                  image: "registry.invalid/app:1",
                  resources: { requests: { cpu: "500m", memory: "64Mi" } },
                }],
              },
            },
          },
        }, {
          apiVersion: "autoscaling/v2",
          kind: "HorizontalPodAutoscaler",
          metadata: { name: "web", namespace: ns },
          spec: {
            scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
            minReplicas: 2,
            maxReplicas: 4,
            metrics: [{
              type: "Resource",
              resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 80 } },
            }],
          },
        }],
      }),
    });
    assert.equal(created.code, 0, created.stderr);
    // 250m used of 500m requested; the HPA controller syncs every 15 s.
    const utilisation = await eventually("the HPA's current CPU utilisation", async () => {
      const res = await cluster.kubectl([
        "-n",
        ns,
        "get",
        "hpa",
        "web",
        "-o",
        "jsonpath={.status.currentMetrics[0].resource.current.averageUtilization}",
      ]);
      return res.code === 0 && res.stdout.trim() ? Number(res.stdout.trim()) : undefined;
    }, 4 * metricsServer.resolutionSeconds * 1000 + 30_000).catch(async (err) => {
      const hpa = await cluster.kubectl(["-n", ns, "describe", "hpa", "web"]);
      throw new Error(`${err.message}\n${hpa.stdout}`);
    });
    assert.ok(Math.abs(utilisation - 50) <= 2, `${utilisation}%`);
    const replicas = await cluster.kubectl([
      "-n",
      ns,
      "get",
      "hpa",
      "web",
      "-o",
      "jsonpath={.status.desiredReplicas}",
    ]);
    assert.equal(replicas.stdout.trim(), "2");
  } finally {
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    await vk.stop();
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
  }
});
