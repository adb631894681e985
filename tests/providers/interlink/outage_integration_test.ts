/**
 * A backend outage (issue 57) on the local control plane: a virtual node with the interlink
 * provider and the reference plugin, two healthy mock nodes in the same (test-only) zone, a
 * Deployment of 3 pods on the virtual node whose pods tolerate `not-ready`/`unreachable` NoExecute
 * for only 5 s (the default is 300 s), and `--provider-outage-grace=25s`.
 *
 * - The plugin stopped for less than the grace: the node stays Ready, `ProviderReachable=False`,
 *   cordoned (the node may not taint itself under NodeRestriction), pods marked as not refreshed;
 *   no pod evicted (same uids) and the plugin's jobs are the same; on recovery all of it undone.
 * - The plugin stopped for longer: the node turns NotReady after the grace, the node-lifecycle
 *   controller evicts the pods; once the plugin answers again the old jobs are deleted and the
 *   replacements run: no job lost or duplicated.
 */
import assert from "node:assert/strict";
import type { Node, Pod } from "kubernetes-types/core/v1.d.ts";
import { useCluster } from "../../../tools/cluster/harness.ts";
import { type RunningVkubelet, startVkubelet } from "../../../tools/cluster/vkubelet.ts";
import { eventually } from "../../../tools/harness/wait.ts";
import { startPlugin } from "./_plugin.ts";

const GRACE_S = 25;

Deno.test("interlink outage: no eviction within --provider-outage-grace, eviction after it, no job lost or duplicated", async (t) => {
  const cluster = await useCluster();
  const plugin = await startPlugin();
  const id = crypto.randomUUID().slice(0, 6);
  const nodeName = `vk-outage-${id}`;
  // A zone of their own: the node-lifecycle controller evicts only while less than 55 % of a
  // zone's nodes are unhealthy, and the shared cluster may hold other tests' stopped nodes.
  const zone =
    `topology.kubernetes.io/region=outage-${id},topology.kubernetes.io/zone=outage-${id}`;
  const ns = await cluster.newNamespace("outage");
  const kubectl = cluster.kubectlIn(ns);
  const nodes: RunningVkubelet[] = [];
  const stopAll = async () => {
    await Promise.all(nodes.map((n) => n.stop()));
    for (const n of nodes) await cluster.kubectl(["delete", "node", n.nodeName, "--wait=false"]);
  };
  try {
    nodes.push(
      ...await Promise.all([
        startVkubelet(cluster, {
          nodeName,
          provider: "interlink",
          providerConfig: JSON.stringify({
            target: "plugin",
            url: plugin.url,
            statusInterval: "500ms",
            requestTimeout: "3s",
            pingTimeout: "2s",
          }),
          args: [
            `--provider-outage-grace=${GRACE_S}s`,
            "--full-resync-period=5s",
            `--node-labels=${zone}`,
          ],
        }),
        ...[1, 2].map((i) =>
          startVkubelet(cluster, {
            nodeName: `vk-healthy-${i}-${id}`,
            args: [`--node-labels=${zone}`],
          })
        ),
      ]),
    );
    const node = async (): Promise<Node> =>
      JSON.parse((await cluster.kubectl(["get", "node", nodeName, "-o", "json"])).stdout);
    const condition = (n: Node, type: string) => n.status?.conditions?.find((c) => c.type === type);
    const pods = async (): Promise<Pod[]> =>
      (JSON.parse(await kubectl(["get", "pods", "-l", "app=batch", "-o", "json"])).items as Pod[])
        .filter((p) => !p.metadata?.deletionTimestamp);
    const uids = async () => (await pods()).map((p) => p.metadata!.uid!).sort();
    const jobs = async () => {
      const out: string[] = [];
      for await (const e of Deno.readDir(`${plugin.state}/pods`)) {
        if (e.isDirectory) out.push(e.name);
      }
      return out.sort();
    };
    const short = (key: string) => ({
      key,
      operator: "Exists",
      effect: "NoExecute",
      tolerationSeconds: 5,
    });
    await kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "batch" },
        spec: {
          replicas: 3,
          selector: { matchLabels: { app: "batch" } },
          template: {
            metadata: { labels: { app: "batch" } },
            spec: {
              nodeSelector: { "kubernetes.io/hostname": nodeName },
              tolerations: [
                { key: "virtual-kubelet.io/provider", operator: "Exists" },
                short("node.kubernetes.io/not-ready"),
                short("node.kubernetes.io/unreachable"),
              ],
              terminationGracePeriodSeconds: 2,
              containers: [{ name: "main", image: "busybox", command: ["sleep", "3600"] }],
            },
          },
        },
      }),
    );
    await kubectl(["rollout", "status", "deployment/batch", "--timeout=90s"]);
    const first = await uids();
    assert.equal(first.length, 3);
    assert.deepEqual(await jobs(), first);

    await t.step(
      "an outage shorter than the grace: marked, cordoned, nothing evicted",
      async () => {
        await plugin.kill();
        const down = await eventually(
          "ProviderReachable False",
          async () => {
            const n = await node();
            return condition(n, "ProviderReachable")?.status === "False" && n;
          },
          30_000,
          500,
        );
        assert.equal(condition(down, "Ready")?.status, "True", "Ready within the grace");
        assert.match(condition(down, "ProviderReachable")!.message!, /does not answer/);
        const marked = await eventually(
          "the pods marked",
          async () => {
            const all = await pods();
            return all.every((p) =>
              p.status?.conditions?.some((c) =>
                c.type === "ProviderReachable" && c.status === "False" &&
                /status not refreshed since/.test(c.message ?? "")
              )
            ) && all;
          },
          20_000,
          500,
        );
        assert.ok(marked.every((p) => p.status?.phase === "Running"));
        const cordoned = await eventually(
          "cordoned",
          async () => {
            const n = await node();
            return n.spec?.unschedulable === true && n;
          },
          15_000,
          500,
        );
        // The annotation marks the cordon as ours and says when it was made (core/node/cordon.ts).
        const since = cordoned.metadata?.annotations?.["vkubelet.io/cordoned-provider-unreachable"];
        assert.ok(since && !Number.isNaN(Date.parse(since)), `cordon annotation: ${since}`);
        const events = await cluster.kubectl([
          "get",
          "events",
          "-n",
          "default",
          `--field-selector=involvedObject.name=${nodeName},reason=ProviderUnreachable`,
          "-o",
          "name",
        ]);
        assert.notEqual(events.stdout.trim(), "", "no ProviderUnreachable event");

        await plugin.restart();
        const up = await eventually(
          "ProviderReachable True again",
          async () => {
            const n = await node();
            return condition(n, "ProviderReachable")?.status === "True" && !n.spec?.unschedulable &&
              n;
          },
          30_000,
          500,
        );
        assert.equal(condition(up, "Ready")?.status, "True");
        await eventually(
          "the pods unmarked",
          async () =>
            (await pods()).every((p) =>
              p.status?.conditions?.some((c) =>
                c.type === "ProviderReachable" && c.status === "True"
              )
            ),
          20_000,
          500,
        );
        assert.deepEqual(await uids(), first, "a pod was evicted within the grace");
        assert.deepEqual(await jobs(), first, "a job was lost or duplicated");
      },
    );

    await t.step("an outage longer than the grace: NotReady, evicted, replaced once", async () => {
      await plugin.kill();
      const notReady = await eventually(
        "Ready False after the grace",
        async () => {
          const n = await node();
          return condition(n, "Ready")?.status === "False" && n;
        },
        (GRACE_S + 30) * 1000,
        1000,
      );
      assert.equal(condition(notReady, "Ready")?.reason, "ProviderPingFailed");
      assert.match(condition(notReady, "Ready")!.message!, /provider-outage-grace/);
      await eventually(
        "the pods evicted",
        async () => {
          const now = await uids();
          return now.length === 3 && now.every((u) => !first.includes(u));
        },
        60_000,
        1000,
      );
      await plugin.restart();
      await kubectl(["rollout", "status", "deployment/batch", "--timeout=90s"]);
      const second = await eventually(
        "3 running replacements, one job each",
        async () => {
          const running = (await pods()).filter((p) => p.status?.phase === "Running");
          const now = running.map((p) => p.metadata!.uid!).sort();
          return now.length === 3 && JSON.stringify(await jobs()) === JSON.stringify(now) && now;
        },
        60_000,
        1000,
      );
      assert.ok(second.every((u) => !first.includes(u)));
    });
  } finally {
    await cluster.kubectl(["-n", ns, "delete", "deployment", "batch", "--wait=false"]);
    await stopAll();
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    await plugin.stop();
  }
});
