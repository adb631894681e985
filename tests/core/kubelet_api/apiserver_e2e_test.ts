import assert from "node:assert/strict";
import { useCluster } from "../../../tools/cluster/harness.ts";
import { call, startClusterServer, withDeadline } from "../../../tools/harness/cluster_server.ts";
import { bindPod, registerNode } from "../../../tools/harness/node.ts";

Deno.test({
  name: "the apiserver reaches the kubelet API: stats, resource metrics and kubectl logs",
  sanitizeOps: true,
  sanitizeResources: true,
  async fn(t) {
    const cluster = await useCluster();
    const nodeName = `vk-e2e-${crypto.randomUUID().slice(0, 6)}`;
    await using s = await startClusterServer(cluster, { nodeName });
    const unregister = await registerNode(cluster, nodeName, s.port);
    const ns = await cluster.newNamespace("vk-logs");
    try {
      await bindPod(cluster, s, ns, "web", nodeName);
      const proxy = `/api/v1/nodes/${nodeName}/proxy`;

      await t.step("kubectl logs with --tail, --timestamps and --limit-bytes", async () => {
        const all = await cluster.kubectl(["-n", ns, "logs", "web"]);
        assert.equal(all.code, 0, all.stderr);
        assert.match(all.stdout, new RegExp(`^mock: container app of pod ${ns}/web started`));
        const tail = await cluster.kubectl([
          "-n",
          ns,
          "logs",
          "web",
          "-c",
          "app",
          "--tail=1",
          "--timestamps",
        ]);
        assert.match(
          tail.stdout,
          /^\d{4}-\d{2}-\d{2}T[\d:.]+Z mock: (container app is running|tick \d+)\n$/,
        );
        const limited = await cluster.kubectl(["-n", ns, "logs", "web", "--limit-bytes=4"]);
        assert.equal(limited.stdout, "mock");
        const since = await cluster.kubectl(["-n", ns, "logs", "web", "--since=1h"]);
        assert.match(since.stdout, /container app is running/);
        const previous = await cluster.kubectl(["-n", ns, "logs", "web", "--previous"]);
        assert.notEqual(previous.code, 0);
        assert.match(previous.stderr, /previous terminated container/);
        const missing = await cluster.kubectl(["-n", ns, "logs", "web", "-c", "nope"]);
        assert.notEqual(missing.code, 0);
      });

      await t.step("kubectl logs -f shows a new line within a second", async () => {
        const child = new Deno.Command(cluster.binary, {
          args: [
            "kubectl",
            `--kubeconfig=${cluster.kubeconfigPath}`,
            "-n",
            ns,
            "logs",
            "-f",
            "web",
          ],
          stdout: "piped",
          stderr: "null",
        }).spawn();
        const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
        try {
          let text = "";
          await withDeadline(
            (async () => {
              while (!/is running\n/.test(text)) text += (await reader.read()).value ?? "";
            })(),
            10_000,
            "the first lines of kubectl logs -f",
          );
          const before = text.match(/tick \d+/g)?.length ?? 0;
          const started = performance.now();
          await withDeadline(
            (async () => {
              while ((text.match(/tick \d+/g)?.length ?? 0) <= before) {
                text += (await reader.read()).value ?? "";
              }
            })(),
            1_000,
            "a new line through kubectl logs -f",
          );
          assert.ok(performance.now() - started < 1_000);
        } finally {
          child.kill();
          await reader.cancel();
          await child.status;
        }
      });
      // The apiserver proxies nodes/proxy only to global unicast addresses
      // (kubernetes/kubernetes pkg/util/proxy `isProxyableIP`), so on loopback the stats and
      // metrics are fetched the way the apiserver would: with its kubelet client certificate.
      await t.step("nodes/proxy refuses a loopback InternalIP", async () => {
        const res = await cluster.kubectl(["get", "--raw", `${proxy}/healthz`]);
        assert.notEqual(res.code, 0);
        assert.match(res.stderr, /address not allowed/);
      });
      const asApiserver = (path: string) =>
        call(s, path, {
          cert: {
            certFile: `${cluster.pkiDir}/apiserver-kubelet-client.crt`,
            keyFile: `${cluster.pkiDir}/apiserver-kubelet-client.key`,
          },
        });

      await t.step("/stats/summary as the apiserver", async () => {
        const res = await asApiserver("/stats/summary");
        assert.equal(res.status, 200, res.body);
        const summary = JSON.parse(res.body);
        assert.equal(summary.node.nodeName, nodeName);
        assert.deepEqual(summary.pods.map((p: { podRef: { name: string } }) => p.podRef.name), [
          "web",
        ]);
      });

      await t.step("/metrics/resource as the apiserver", async () => {
        const res = await asApiserver("/metrics/resource");
        assert.equal(res.status, 200, res.body);
        assert.match(
          res.body,
          new RegExp(
            `container_cpu_usage_seconds_total\\{container="app",namespace="${ns}",pod="web"\\} [0-9.e-]+ \\d+`,
          ),
        );
        assert.match(res.body, /^node_memory_working_set_bytes [1-9]/m);
      });
    } finally {
      await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
      await unregister();
    }
  },
});
