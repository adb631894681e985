/**
 * Two nodes served by one process (`--nodes`) with what one node takes and `--nodes` used to
 * refuse (issue 62): `--leader-elect` and kubelet-serving CSRs, against the real control plane.
 * The set holds one election Lease, named after its first node, and each node's address is
 * served with a certificate of its own, asked for by a CSR naming that node and its address.
 * @module
 */
import assert from "node:assert/strict";
import tls from "node:tls";
import { useCluster } from "../../tools/cluster/harness.ts";
import { loadConfig } from "../../app/config/config.ts";
import { runVkubelet } from "../../app/run/mod.ts";
import { realClock } from "../../base/clock.ts";
import { freePort } from "../../tools/cluster/ports.ts";
import { eventually } from "../../tools/harness/wait.ts";

/** The subjectAltName of the certificate served at `host:port`. */
function servedNames(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host, port, rejectUnauthorized: false }, () => {
      const names = socket.getPeerCertificate().subjectaltname ?? "";
      socket.end();
      resolve(names);
    });
    socket.on("error", reject);
  });
}

Deno.test({
  name: "--nodes under --leader-elect: one Lease for the set, a CSR-issued certificate per node",
  sanitizeResources: false, // The cluster harness keeps its kubectl client cache.
  async fn() {
    const cluster = await useCluster();
    const ns = await cluster.newNamespace("multinode-le");
    const suffix = ns.slice(-5);
    const net = 10 + Math.floor(Math.random() * 240);
    const nodes = ["a", "b"].map((x, i) => ({
      name: `mnle-${x}-${suffix}`,
      nodeIp: `127.4.${net}.${i + 2}`,
    }));
    const dir = await Deno.makeTempDir({ prefix: "vk-multinode-le-" });
    const port = freePort();
    const loaded = await loadConfig({
      args: [
        "--provider=mock",
        `--kubeconfig=${cluster.kubeconfigPath}`,
        `--port=${port}`,
        `--cert-dir=${dir}/pki`,
        "--leader-elect",
        `--leader-elect-namespace=${ns}`,
        `--nodes=${nodes.map((n) => n.name).join(",")}`,
      ],
      env: {},
      readFile: Deno.readTextFile,
    });
    assert.ok(loaded.ok, loaded.ok ? "" : loaded.errors.join("\n"));
    const entries = nodes.map((n) => ({ ...n, labels: {} }));
    const config = { ...loaded.config, nodes: entries };
    const approved = new Set<string>();
    // As an admin would: the pending kubelet-serving CSRs whose request names one of our nodes.
    const approve = async () => {
      const list = JSON.parse((await cluster.kubectl(["get", "csr", "-o", "json"])).stdout);
      for (const csr of list.items) {
        const name = csr.metadata.name as string;
        if (csr.spec.signerName !== "kubernetes.io/kubelet-serving" || approved.has(name)) continue;
        const pem = atob(csr.spec.request);
        const der = atob(pem.replace(/-----[^-]+-----/g, "").replace(/\s/g, ""));
        if (!nodes.some((n) => der.includes(`system:node:${n.name}`))) continue;
        await cluster.kubectl(["certificate", "approve", name]);
        approved.add(name);
      }
    };
    const stop = new AbortController();
    const ready = Promise.withResolvers<void>();
    const running = runVkubelet(config, {
      signal: stop.signal,
      clock: realClock,
      detectInternalIp: () => "127.0.0.1",
      onReady: () => ready.resolve(),
    });
    running.catch((err) => ready.reject(err));
    try {
      await ready.promise;
      const holder = await eventually("the set's election Lease to be held", async () => {
        const res = await cluster.kubectl([
          "-n",
          ns,
          "get",
          "lease",
          `vkubelet-${nodes[0].name}`,
          "-o",
          "jsonpath={.spec.holderIdentity}",
        ]);
        return res.code === 0 && res.stdout ? res.stdout : undefined;
      });
      assert.ok(holder);
      // One Lease for the set: none is named after the second node.
      const second = await cluster.kubectl(["-n", ns, "get", "lease", `vkubelet-${nodes[1].name}`]);
      assert.notEqual(second.code, 0, "the second node has no election Lease of its own");
      await eventually("both nodes' serving CSRs approved", async () => {
        await approve();
        return approved.size >= 2 ? true : undefined;
      });
      for (const node of nodes) {
        await eventually(`${node.name} Ready at ${node.nodeIp}`, async () => {
          const out = await cluster.kubectlIn(ns)([
            "get",
            "node",
            node.name,
            "-o",
            'jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.addresses[?(@.type=="InternalIP")].address}',
          ]);
          return out === `True ${node.nodeIp}` ? true : undefined;
        });
        const names = await eventually(`${node.name}'s certificate served`, async () => {
          try {
            return await servedNames(node.nodeIp, port);
          } catch {
            return undefined;
          }
        });
        assert.match(names, new RegExp(`DNS:${node.name}\\b`), names);
        assert.match(names, new RegExp(`IP Address:${node.nodeIp.replaceAll(".", "\\.")}\\b`));
        const other = nodes.find((n) => n !== node)!;
        assert.doesNotMatch(names, new RegExp(other.name), "a certificate names its own node only");
      }
    } finally {
      stop.abort();
      await running.catch(() => {});
      for (const node of nodes) {
        await cluster.kubectl(["delete", "node", node.name, "--wait=false"]);
      }
      await Deno.remove(dir, { recursive: true });
    }
  },
});
