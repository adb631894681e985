/**
 * vkubelet through control-plane outages, on a private cluster of its own (never the shared
 * one, whose components other tests rely on): with 200 pods running, the API server is stopped
 * for 30 s and then etcd for 20 s. vkubelet must stay up, leave the pods alone (same pods, no
 * restarts), resume its watches, and run new pods afterwards. Bounded: one Deployment, fixed
 * outage lengths, every wait with a deadline.
 */
import assert from "node:assert/strict";
import { useCluster } from "../../tools/cluster/harness.ts";
import { startVkubelet } from "../../tools/cluster/vkubelet.ts";

const cli = new URL("../../tools/cluster/cli.ts", import.meta.url).pathname;
const CLUSTER = "robust-faults";
const NODE = "vk-faults";
const NS = "faults";

async function cluster(args: string[]): Promise<void> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", cli, `--name=${CLUSTER}`, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`cluster ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test({
  name: "API server down 30 s and etcd down 20 s with 200 pods: vkubelet and its pods carry on",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const c = await useCluster(CLUSTER);
    const kubectl = c.kubectlIn(NS);
    const vk = await startVkubelet(c, { nodeName: NODE, provider: "mock" });
    let exited = false;
    vk.status.then(() => exited = true);
    /** uid -> restartCount of the Running pods on the node. */
    const running = async () => {
      const res = await c.kubectl([
        "-n",
        NS,
        "get",
        "pods",
        "-o",
        'jsonpath={range .items[?(@.status.phase=="Running")]}{.metadata.uid} {.status.containerStatuses[0].restartCount}{"\\n"}{end}',
      ]);
      if (res.code !== 0) return undefined;
      return new Map(
        res.stdout.trim().split("\n").filter(Boolean).map((l) => l.split(" ") as [string, string]),
      );
    };
    const waitRunning = async (count: number, what: string, timeoutMs = 180_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const pods = await running();
        if (pods && pods.size === count) return pods;
        if (Date.now() > deadline) {
          throw new Error(`${what}: ${pods?.size ?? "?"} of ${count} pods Running`);
        }
        await sleep(1_000);
      }
    };
    try {
      await c.kubectl(["create", "namespace", NS]);
      const deployment = {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "load", namespace: NS },
        spec: {
          replicas: 200,
          selector: { matchLabels: { app: "load" } },
          template: {
            metadata: { labels: { app: "load" } },
            spec: {
              nodeSelector: { "kubernetes.io/hostname": NODE },
              tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
              containers: [{ name: "app", image: "nginx:1" }],
            },
          },
        },
      };
      await kubectl(["apply", "-f", "-"], JSON.stringify(deployment));
      const before = await waitRunning(200, "before the outages");

      await cluster(["stop", "kube-apiserver"]);
      await sleep(30_000);
      assert.ok(!exited, "vkubelet exited while the API server was down:\n" + vk.output());
      await cluster(["start", "kube-apiserver"]);
      await cluster(["stop", "etcd"]);
      await sleep(20_000);
      assert.ok(!exited, "vkubelet exited while etcd was down:\n" + vk.output());
      await cluster(["start", "etcd"]);

      // The same pods, never restarted or replaced.
      const after = await waitRunning(200, "after the outages", 120_000);
      assert.deepEqual([...after.keys()].sort(), [...before.keys()].sort());
      assert.ok([...after.values()].every((n) => n === "0"), "a pod was restarted");
      // Watches resumed: new pods are picked up and run.
      await kubectl(["scale", "deployment/load", "--replicas=210"]);
      await waitRunning(210, "after scaling up", 120_000);
      assert.ok(!exited, "vkubelet exited:\n" + vk.output());
      const { code } = await vk.stop("SIGTERM");
      assert.equal(code, 0);
    } finally {
      if (!exited) await vk.stop("SIGKILL");
      await cluster(["down"]);
    }
  },
});
