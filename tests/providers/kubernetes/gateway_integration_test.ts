/**
 * `gateway` (issue #64 item 4) with the real tunnel and agent, on the two loopback clusters: the
 * virtual node in A runs with `--remote-pod-network` (a test host's CNI network, 198.19.x.0/24)
 * and `gateway:`; the provider's least-privilege identity in B deploys the gateway, which runs on
 * B's process-provider node as a host process (`agentCommand`: this checkout's agent under
 * Deno) and connects to the virtual node. A pod forwarded to B gets an A-side IP on the test
 * host's network, and a connection from the test host to that IP reaches the pod's process in B
 * through the gateway; A's Service is reflected into B as a selectorless Service with an
 * EndpointSlice carrying its gateway port. The test clusters give pods loopback IPs, which B
 * refuses as endpoints, so the slice has no endpoint here and B-to-A traffic is not tried (it needs
 * routable Service and pod IPs: the network lab's gateway test does both directions). Root only.
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { EndpointSlice } from "kubernetes-types/discovery/v1.d.ts";
import { NamespacedApi } from "../../../k8s/mod.ts";
import { freePort } from "../../../app/run/parts.ts";
import { eventually } from "../../../tools/harness/wait.ts";
import { networkLab, networkSkipReason, tryRun } from "../process/_network_lab.ts";
import { twoClusters } from "./_setup.ts";

const skip = networkSkipReason();
if (skip) console.warn(`kubernetes provider gateway integration test skipped: ${skip}`);

const repo = new URL("../../../", import.meta.url).pathname;

Deno.test({
  name:
    "kubernetes provider with the real gateway: deployed in B by the least-privilege identity, it connects, a forwarded pod answers at its A-side IP through it, A's Service is reflected",
  ignore: skip !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const lab = await networkLab();
    const dir = await Deno.makeTempDir({ prefix: "vk-kgw-" });
    const gatewayNamespace = `vkgw-${crypto.randomUUID().slice(0, 6)}`;
    // Not under /tmp: a process pod's /tmp is its own.
    const denoDir = join(repo, ".cache", "gateway-agent-deno-dir");
    await Deno.mkdir(denoDir, { recursive: true });
    const file = join(dir, "remote-pod-network.json");
    await Deno.writeTextFile(
      file,
      JSON.stringify({
        ...lab.network,
        cniBinDir: [lab.network.cniBinDir],
        stateDir: join(dir, "state"),
        agentCommand: [
          "env",
          `DENO_DIR=${denoDir}`,
          Deno.execPath(),
          "run",
          "--no-config",
          "-A",
          join(repo, "app/agent/main.ts"),
        ],
      }),
    );
    const env = await twoClusters({
      providerConfig: {
        namespaces: "same",
        gateway: { image: "vkubelet:test", namespace: gatewayNamespace },
      },
      gatewayNamespace,
      virtualNodeArgs: [`--remote-pod-network=${file}`],
    }).catch(async (err) => {
      await lab.close();
      throw err;
    });
    const ns = env.namespaceA;
    const kubectlA = env.a.kubectlIn(ns);
    const slices = new NamespacedApi<EndpointSlice>(env.adminB, {
      group: "discovery.k8s.io",
      version: "v1",
      plural: "endpointslices",
    });
    const log = () =>
      env.virtualNode.output().split("\n").filter((l) => /gateway|tunnel/i.test(l)).slice(-30)
        .join("\n");
    try {
      await eventually("the gateway connected (the virtual node's log)", () => {
        return env.virtualNode.output().includes("gateway connected");
      }, 120_000).catch((err) => {
        throw new Error(`${err.message}\n${log()}`);
      });
      const gateways = await env.adminB.pods.list({ namespace: gatewayNamespace });
      assert.equal(gateways.items.length, 1);
      assert.equal(gateways.items[0].spec?.nodeName, env.nodeB.nodeName, "runs on B's node");
      assert.equal(gateways.items[0].spec?.automountServiceAccountToken, false);

      await kubectlA(
        ["apply", "-f", "-"],
        JSON.stringify({
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "web" },
          spec: { selector: { app: "web" }, ports: [{ name: "http", port: 80 }] },
        }),
      );
      const port = freePort("127.0.0.1");
      await kubectlA(
        ["apply", "-f", "-"],
        JSON.stringify({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "web", labels: { app: "web" } },
          spec: {
            ...env.placement,
            terminationGracePeriodSeconds: 0,
            containers: [{
              name: "main",
              image: "busybox",
              ports: [{ containerPort: port }],
              command: [
                "socat",
                `TCP-LISTEN:${port},bind=127.0.0.1,reuseaddr,fork`,
                "SYSTEM:echo hello from B",
              ],
            }],
          },
        }),
      );
      const podIP = await eventually("the pod's A-side IP in A's status", async () => {
        const ip = (await kubectlA(["get", "pod", "web", "-o", "jsonpath={.status.podIP}"]))
          .trim();
        return ip.startsWith(lab.podCIDR.slice(0, -5)) && ip;
      }, 90_000).catch((err) => {
        throw new Error(`${err.message}\n${log()}`);
      });
      const inB = await env.adminB.pods.get(ns, "web");
      assert.notEqual(inB.status?.podIP, podIP, "B keeps its own IP for the pod");

      const answer = await eventually("the pod answering at its A-side IP", async () => {
        const got = await tryRun(
          "ip",
          "netns",
          "exec",
          lab.name,
          "curl",
          "-s",
          "--http0.9",
          "--max-time",
          "5",
          `http://${podIP}:${port}/`,
        );
        return got.stdout.includes("hello from B") && got.stdout;
      }, 60_000).catch((err) => {
        throw new Error(`${err.message}\n${log()}`);
      });
      assert.match(answer, /hello from B/);

      const slice = await eventually("the reflected EndpointSlice in B", () => {
        return slices.get(ns, "web-gateway").catch(() => false as const);
      }, 30_000);
      assert.ok(slice.ports![0].port! >= 20000);
      const reflected = await env.adminB.services.get(ns, "web");
      assert.equal(reflected.spec?.selector, undefined);
      assert.equal(reflected.spec?.ports?.[0].targetPort, slice.ports![0].port);

      await kubectlA(["delete", "pod", "web"]);
      await eventually("the A-side IP answering no more", async () => {
        const got = await tryRun(
          "ip",
          "netns",
          "exec",
          lab.name,
          "curl",
          "-s",
          "--http0.9",
          "--max-time",
          "2",
          `http://${podIP}:${port}/`,
        );
        return !got.stdout.includes("hello from B");
      }, 60_000);
    } finally {
      await env.close();
      await lab.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
