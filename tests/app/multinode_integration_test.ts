/**
 * Three virtual nodes served by one vkubelet process (`--nodes`, issue 22 item 3), against the
 * real control plane: every node Ready, pods scheduled to each node Running there, `kubectl logs`
 * through the apiserver and `/stats/summary` at each node's address reaching the right node on the one shared port, one
 * pod watch for all nodes, and a node taken out of the set stops renewing its Lease while the
 * others go on.
 * @module
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { useCluster } from "../../tools/cluster/harness.ts";
import { loadConfig } from "../../app/config/config.ts";
import { runVkubelet } from "../../app/run/mod.ts";
import type { NodeSet } from "../../app/node_set.ts";
import { realClock } from "../../base/clock.ts";
import { freePort } from "../../tools/cluster/ports.ts";
import { eventually } from "../../tools/harness/wait.ts";

/** The sum of `vkubelet_kube_api_requests_total` for `verb`, from the process's /metrics. */
async function requests(metricsPort: number, verb: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  let total = 0;
  for (const line of text.split("\n")) {
    const m = /^vkubelet_kube_api_requests_total\{(.*)\} (\d+)/.exec(line);
    if (m && m[1].includes(`verb="${verb}"`)) total += Number(m[2]);
  }
  return total;
}

Deno.test({
  name: "one process serves three nodes: Ready, pods Running on each, logs and stats routed",
  sanitizeResources: false, // The cluster harness keeps its kubectl client cache.
  async fn() {
    const cluster = await useCluster();
    const ns = await cluster.newNamespace("multinode");
    const kubectl = cluster.kubectlIn(ns);
    const suffix = ns.slice(-5);
    const net = 10 + Math.floor(Math.random() * 240);
    const nodes = ["a", "b", "c"].map((x, i) => ({
      name: `mn-${x}-${suffix}`,
      // Distinct loopback addresses: the apiserver reaches each node at its own InternalIP.
      nodeIp: `127.3.${net}.${i + 2}`,
    }));
    const dir = await Deno.makeTempDir({ prefix: "vk-multinode-" });
    // Per-node provider config for two nodes (own pod CIDRs), the shared one for the third.
    await Deno.writeTextFile(`${dir}/a.yaml`, "podCIDR: 127.81.0.0/24\n");
    await Deno.writeTextFile(`${dir}/b.yaml`, "podCIDR: 127.82.0.0/24\n");
    await Deno.writeTextFile(`${dir}/shared.yaml`, "podCIDR: 127.83.0.0/24\n");
    const serving = await cluster.issueServingCert(nodes[0].name, [
      ...nodes.map((n) => n.name),
      ...nodes.map((n) => n.nodeIp),
    ]);
    const metricsPort = freePort();
    await Deno.writeTextFile(
      `${dir}/vk.yaml`,
      JSON.stringify({
        provider: "mock",
        providerConfig: `${dir}/shared.yaml`,
        kubeconfig: cluster.kubeconfigPath,
        port: freePort(),
        tlsCertFile: serving.certFile,
        tlsPrivateKeyFile: serving.keyFile,
        metricsAddr: `127.0.0.1:${metricsPort}`,
        nodeLeaseDurationSeconds: 8, // Renewed every 2 s.
        nodes: [
          { ...nodes[0], labels: { "example.com/pool": "first" }, providerConfig: `${dir}/a.yaml` },
          { ...nodes[1], providerConfig: `${dir}/b.yaml` },
          nodes[2],
        ],
      }),
    );
    const loaded = await loadConfig({
      args: [`--config=${dir}/vk.yaml`],
      env: {},
      readFile: Deno.readTextFile,
    });
    assert.ok(loaded.ok, loaded.ok ? "" : loaded.errors.join("\n"));
    const client = Deno.createHttpClient({
      caCerts: [await Deno.readTextFile(`${cluster.pkiDir}/ca.crt`)],
      cert: await Deno.readTextFile(`${cluster.pkiDir}/admin.crt`),
      key: await Deno.readTextFile(`${cluster.pkiDir}/admin.key`),
    });
    const stop = new AbortController();
    let set: NodeSet | undefined;
    const ready = Promise.withResolvers<void>();
    const running = runVkubelet(loaded.config, {
      signal: stop.signal,
      clock: realClock,
      detectInternalIp: () => "127.0.0.1",
      onNodeSet: (s) => set = s,
      onReady: () => ready.resolve(),
    });
    running.catch((err) => ready.reject(err));
    try {
      await ready.promise;
      for (const node of nodes) {
        await eventually(`${node.name} Ready`, async () => {
          const out = await kubectl([
            "get",
            "node",
            node.name,
            "-o",
            'jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.addresses[?(@.type=="InternalIP")].address}',
          ]);
          return out === `True ${node.nodeIp}` ? true : undefined;
        });
      }
      assert.equal(
        await kubectl([
          "get",
          "node",
          nodes[0].name,
          "-o",
          "jsonpath={.metadata.labels.example\\.com/pool}",
        ]),
        "first",
      );
      // Two pods per node, placed by the scheduler.
      const pods = nodes.flatMap((node, n) =>
        [0, 1].map((i) => ({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: `p${n}-${i}`, namespace: ns },
          spec: {
            nodeSelector: { "kubernetes.io/hostname": node.name },
            tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
            // No token volume: its kube-root-ca.crt would add a by-name ConfigMap watch per node
            // to the count of pod and Service watches below.
            automountServiceAccountToken: false,
            containers: [{ name: "main", image: "example/app:1" }],
          },
        }))
      );
      await kubectl(
        ["apply", "-f", "-"],
        JSON.stringify({ apiVersion: "v1", kind: "List", items: pods }),
      );
      const running3 = await eventually("all 6 pods Running", async () => {
        const list = JSON.parse(await kubectl(["get", "pods", "-o", "json"])).items as Pod[];
        return list.length === 6 && list.every((p) => p.status?.phase === "Running")
          ? list
          : undefined;
      });
      for (const pod of running3) {
        const n = Number(pod.metadata!.name![1]);
        assert.equal(pod.spec?.nodeName, nodes[n].name, `${pod.metadata!.name} on its node`);
        assert.equal(pod.status?.hostIP, nodes[n].nodeIp, `${pod.metadata!.name} hostIP`);
        const cidr = ["127.81.0.", "127.82.0.", "127.83.0."][n];
        assert.ok(pod.status?.podIP?.startsWith(cidr), `${pod.metadata!.name} IP from ${cidr}`);
      }
      // The apiserver dials each node's address on the one port: logs and node stats arrive at
      // the right node.
      for (const [n, node] of nodes.entries()) {
        const logs = await kubectl(["logs", `p${n}-0`]);
        assert.match(logs, new RegExp(`container main of pod ${ns}/p${n}-0 started`));
        // The apiserver's node proxy refuses loopback addresses ("address not allowed"), so
        // node-scoped paths are asked directly, as metrics-server asks them: at the node's
        // address, on the shared port, as the cluster admin.
        const response: Response = await fetch(
          `https://${node.nodeIp}:${loaded.config.port}/stats/summary`,
          { client },
        );
        assert.equal(response.status, 200);
        const summary = await response.json();
        assert.equal(summary.node.nodeName, node.name);
        assert.deepEqual(
          summary.pods.map((p: { podRef: { name: string } }) => p.podRef.name).sort(),
          [`p${n}-0`, `p${n}-1`],
        );
      }
      // One watch of pods, one of services and one of the virtual Nodes (the status checks read
      // it) for all three nodes (one process per node would hold nine).
      assert.equal(await requests(metricsPort, "WATCH"), 3);
      // Pods with a service-account token on two nodes: their namespace's kube-root-ca.crt is
      // watched once for the process, not once per node.
      const tokenPods = [0, 1].map((n) => ({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: `t${n}`, namespace: ns },
        spec: {
          nodeSelector: { "kubernetes.io/hostname": nodes[n].name },
          tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
          containers: [{ name: "main", image: "example/app:1" }],
        },
      }));
      await kubectl(
        ["apply", "-f", "-"],
        JSON.stringify({ apiVersion: "v1", kind: "List", items: tokenPods }),
      );
      await eventually("both token pods Running", async () => {
        const phases = await kubectl(["get", "pods", "t0", "t1", "-o", "jsonpath={..phase}"]);
        return phases === "Running Running" || undefined;
      });
      assert.equal(await requests(metricsPort, "WATCH"), 4, "one kube-root-ca.crt watch");
      // A Node deleted behind our back is gone from that watch; the next status check reads it
      // from the apiserver, finds it missing and registers it again.
      await kubectl(["delete", "node", nodes[1].name]);
      await eventually(`node ${nodes[1].name} registered again`, async () => {
        const out = await kubectl(["get", "nodes", "-o", "name"]);
        return out.includes(`node/${nodes[1].name}`) || undefined;
      });
      // A node taken out of the set stops renewing; the others go on.
      const renewTime = async (name: string) =>
        await kubectl([
          "-n",
          "kube-node-lease",
          "get",
          "lease",
          name,
          "-o",
          "jsonpath={.spec.renewTime}",
        ]);
      await set!.remove(nodes[2].name);
      const removedAt = await renewTime(nodes[2].name);
      const keptAt = await renewTime(nodes[0].name);
      await new Promise((r) => setTimeout(r, 5_000));
      assert.equal(await renewTime(nodes[2].name), removedAt, "the removed node's lease is left");
      assert.notEqual(await renewTime(nodes[0].name), keptAt, "the others are still renewed");
      assert.deepEqual(set!.names, [nodes[0].name, nodes[1].name]);
    } finally {
      stop.abort();
      await running.catch(() => {});
      await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
      await cluster.kubectl(["delete", "node", ...nodes.map((n) => n.name), "--wait=false"]);
      client.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
