/**
 * `kill -9` of vkubelet in the middle of create/delete churn, on a private cluster of its own:
 * a Deployment scaled between 0 and 500 replicas with pods deleted at random, vkubelet killed
 * and restarted halfway. Afterwards every pod the API has is Running on the node (none lost),
 * none is stuck Pending or Terminating, and the provider holds each exactly once (none
 * duplicated). Bounded: fixed seed, 40 s of churn, every wait with a deadline.
 */
import assert from "node:assert/strict";
import { useCluster } from "../../tools/cluster/harness.ts";
import { startVkubelet } from "../../tools/cluster/vkubelet.ts";
import { random } from "../fakes/fuzz.ts";

const cli = new URL("../../tools/cluster/cli.ts", import.meta.url).pathname;
const CLUSTER = "robust-churn";
const NODE = "vk-churn";
const NS = "churn";
const FINAL = 300;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface PodRow {
  uid: string;
  name: string;
  phase: string;
  deleting: boolean;
}

Deno.test({
  name: "kill -9 during churn of up to 500 pods: none lost, duplicated or stuck",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const c = await useCluster(CLUSTER);
    const kubectl = c.kubectlIn(NS);
    const rng = random(0xc4077);
    let vk = await startVkubelet(c, { nodeName: NODE, provider: "mock" });
    const pods = async (): Promise<PodRow[]> => {
      const out = await kubectl([
        "get",
        "pods",
        "-o",
        'jsonpath={range .items[*]}{.metadata.uid} {.metadata.name} {.status.phase} {.metadata.deletionTimestamp}{"\\n"}{end}',
      ]);
      return out.trim().split("\n").filter(Boolean).map((line) => {
        const [uid, name, phase, deleting] = line.split(" ");
        return { uid, name, phase, deleting: !!deleting };
      });
    };
    try {
      await c.kubectl(["create", "namespace", NS]);
      await kubectl(
        ["apply", "-f", "-"],
        JSON.stringify({
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: "churn", namespace: NS },
          spec: {
            replicas: 0,
            selector: { matchLabels: { app: "churn" } },
            template: {
              metadata: { labels: { app: "churn" } },
              spec: {
                nodeSelector: { "kubernetes.io/hostname": NODE },
                tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
                terminationGracePeriodSeconds: 5,
                containers: [{ name: "app", image: "nginx:1" }],
              },
            },
          },
        }),
      );
      const churnUntil = Date.now() + 40_000;
      let killed = false;
      while (Date.now() < churnUntil) {
        await kubectl(["scale", "deployment/churn", `--replicas=${rng.int(501)}`]);
        const current = await pods();
        const victims = current.filter(() => rng.int(10) === 0).slice(0, 50).map((p) => p.name);
        if (victims.length > 0) {
          await kubectl(["delete", "pod", "--wait=false", "--ignore-not-found", ...victims]);
        }
        if (!killed && Date.now() > churnUntil - 25_000) {
          killed = true;
          await vk.stop("SIGKILL");
          await sleep(3_000);
          vk = await startVkubelet(c, { nodeName: NODE, provider: "mock", like: vk });
        }
        await sleep(2_000);
      }
      await kubectl(["scale", "deployment/churn", `--replicas=${FINAL}`]);
      const deadline = Date.now() + 240_000;
      let last: PodRow[] = [];
      for (;;) {
        last = await pods();
        const settled = last.length === FINAL &&
          last.every((p) => p.phase === "Running" && !p.deleting);
        if (settled) break;
        if (Date.now() > deadline) {
          const stuck = last.filter((p) => p.phase !== "Running" || p.deleting);
          assert.fail(
            `${last.length} pods, ${stuck.length} not settled, e.g. ${JSON.stringify(stuck[0])}`,
          );
        }
        await sleep(2_000);
      }
      // The provider's view, from the kubelet API as the API server sees it (its client cert).
      const client = Deno.createHttpClient({
        caCerts: [await Deno.readTextFile(`${c.pkiDir}/ca.crt`)],
        cert: await Deno.readTextFile(`${c.pkiDir}/apiserver-kubelet-client.crt`),
        key: await Deno.readTextFile(`${c.pkiDir}/apiserver-kubelet-client.key`),
      });
      const res = await fetch(`https://127.0.0.1:${vk.port}/pods`, { client });
      const listed = await res.json() as {
        items: Array<{ metadata: { namespace: string; uid: string } }>;
      };
      client.close();
      const uids = listed.items.filter((p) => p.metadata.namespace === NS).map((p) =>
        p.metadata.uid
      );
      assert.equal(new Set(uids).size, uids.length, "a pod is in the provider twice");
      assert.deepEqual(uids.sort(), last.map((p) => p.uid).sort());
    } finally {
      await vk.stop("SIGKILL");
      await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", cli, `--name=${CLUSTER}`, "down"],
        stdout: "null",
        stderr: "null",
      }).output();
    }
  },
});
