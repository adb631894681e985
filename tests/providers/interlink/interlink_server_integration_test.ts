/**
 * vkubelet → interLink's own API server (built from Go modules by tools/harness/interlink/, at
 * the version the SLURM plugin's go.mod names) → the reference plugin answering as the SLURM
 * plugin does (./_real_like.ts), against the local control plane, through kubectl. The node is
 * registered as interLink's virtual kubelet registers its own (labels and the
 * `virtual-node.interlink/no-schedule` taint, by `--node-labels` and `--register-with-taints`),
 * so the Deployment's manifest is one written for interLink. A rollout of 20 pods with an init
 * container and ConfigMap, Secret, downwardAPI and projected service-account volumes reaches
 * Running with every volume's files on the plugin's side; `kubectl logs` reads them through the
 * server; scale to 0 leaves the plugin with no job.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { useCluster } from "../../../tools/cluster/harness.ts";
import { startVkubelet } from "../../../tools/cluster/vkubelet.ts";
import { eventually } from "../../../tools/harness/wait.ts";
import { startInterlinkServer } from "../../../tools/harness/interlink/interlink.ts";
import { startPlugin } from "./_plugin.ts";

const REPLICAS = 20;

/** interLink's node (interlink-hq/interLink 9ed14a4e, pkg/virtualkubelet/virtualkubelet.go:373-389). */
const INTERLINK_NODE_FLAGS = [
  "--node-labels=virtual-node.interlink/type=virtual-kubelet,kubernetes.io/role=agent," +
  "node.kubernetes.io/exclude-from-external-load-balancers=true," +
  "alpha.service-controller.kubernetes.io/exclude-balancer=true",
  "--register-with-taints=virtual-node.interlink/no-schedule=true:NoSchedule",
  "--disable-taint",
];

Deno.test("interlink provider through interLink's API server: a rollout with every volume, logs, scale to 0", async (t) => {
  const cluster = await useCluster();
  const plugin = await startPlugin({ realLike: true });
  const server = await startInterlinkServer({ pluginUrl: plugin.url! });
  const nodeName = `vk-ilserver-${crypto.randomUUID().slice(0, 6)}`;
  const ns = await cluster.newNamespace("ilserver");
  const kubectl = cluster.kubectlIn(ns);
  const node = await startVkubelet(cluster, {
    nodeName,
    provider: "interlink",
    providerConfig: JSON.stringify({
      target: "interlink",
      url: server.url,
      statusInterval: "1s",
      requestTimeout: "10s",
      capacity: { cpu: "64", memory: "256Gi", pods: "300" },
    }),
    args: INTERLINK_NODE_FLAGS,
  });
  const jobs = async () => {
    const out: string[] = [];
    for await (const e of Deno.readDir(`${plugin.state}/pods`)) if (e.isDirectory) out.push(e.name);
    return out.sort();
  };
  const pods = async () => {
    const list = JSON.parse(await kubectl(["get", "pods", "-l", "app=hpc", "-o", "json"]));
    return (list.items as Pod[]).filter((p) => !p.metadata?.deletionTimestamp);
  };
  try {
    await t.step("the node is interLink's: its labels and taint", async () => {
      const n = JSON.parse(await kubectl(["get", "node", nodeName, "-o", "json"]));
      assert.equal(n.metadata.labels["virtual-node.interlink/type"], "virtual-kubelet");
      assert.equal(
        n.metadata.labels["node.kubernetes.io/exclude-from-external-load-balancers"],
        "true",
      );
      // kubernetes.io/role and alpha.service-controller.kubernetes.io/exclude-balancer are under
      // kubernetes.io but not the kubelet's own: NodeRestriction refuses them to a node's
      // credentials (vkubelet logs which and registers without them).
      assert.equal(n.metadata.labels["kubernetes.io/role"], undefined);
      // The node lifecycle controller's not-ready taint stays a monitor period after Ready, so
      // only the taints vkubelet registers are compared.
      const own = (n.spec.taints as { key: string }[]).filter((x) =>
        !x.key.startsWith("node.kubernetes.io/")
      );
      assert.deepEqual(own, [{
        key: "virtual-node.interlink/no-schedule",
        value: "true",
        effect: "NoSchedule",
      }]);
    });

    await t.step(
      `a rollout of ${REPLICAS} pods with every volume type reaches Running`,
      async () => {
        await kubectl(["create", "configmap", "settings", "--from-literal=mode=fast"]);
        await kubectl(["create", "secret", "generic", "creds", "--from-literal=user=alice"]);
        await kubectl(["apply", "-f", "-"], JSON.stringify(deployment(nodeName, REPLICAS)));
        await kubectl(["rollout", "status", "deployment/hpc", "--timeout=240s"]);
        const running = await pods();
        assert.equal(running.length, REPLICAS);
        assert.deepEqual(await jobs(), running.map((p) => p.metadata!.uid!).sort());
        for (const p of running) {
          const init = p.status?.initContainerStatuses?.[0];
          assert.equal(init?.state?.terminated?.reason, "Completed", `${p.metadata!.name} init`);
        }
        // What reached the plugin through interLink's server (the reference plugin writes
        // ConfigMaps and projected maps as files under volumes/<name>/).
        const one = running[0];
        const dir = `${plugin.state}/pods/${one.metadata!.uid}/volumes`;
        assert.equal(await Deno.readTextFile(`${dir}/settings/mode`), "fast");
        assert.equal(await Deno.readTextFile(`${dir}/podinfo/name`), one.metadata!.name);
        const sa = one.spec!.volumes!.find((v) => v.name.startsWith("kube-api-access-"))!;
        const token = await Deno.readTextFile(`${dir}/${sa.name}/token`);
        assert.match(token, /^ey[\w-]+\.[\w-]+\.[\w-]+$/, "a service-account token (JWT)");
      },
    );

    await t.step("kubectl logs reads a pod's log through interLink's server", async () => {
      const [p] = await pods();
      const name = p.metadata!.name!;
      const text = await eventually("the pod's log", async () => {
        const out = await kubectl(["logs", name, "-c", "main"]);
        return out.includes("hello") && out;
      });
      assert.equal(text.trim(), `hello from ${name}`);
    });

    await t.step("scale to 0 deletes every job", async () => {
      await kubectl(["scale", "deployment/hpc", "--replicas=0"]);
      await eventually(
        "no pods and no jobs",
        async () => (await pods()).length === 0 && (await jobs()).length === 0,
        120_000,
      );
    });
  } finally {
    await node.stop();
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    await server.stop();
    await plugin.stop();
  }
});

/** A Deployment as written for interLink: its node selector and toleration. */
function deployment(nodeName: string, replicas: number) {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "hpc" },
    spec: {
      replicas,
      selector: { matchLabels: { app: "hpc" } },
      template: {
        metadata: { labels: { app: "hpc" } },
        spec: {
          nodeSelector: { "kubernetes.io/hostname": nodeName },
          tolerations: [{ key: "virtual-node.interlink/no-schedule", operator: "Exists" }],
          terminationGracePeriodSeconds: 2,
          initContainers: [{ name: "setup", image: "busybox", command: ["true"] }],
          containers: [{
            name: "main",
            image: "busybox",
            command: ["/bin/sh", "-c", 'echo "hello from $POD_NAME"; exec sleep 3600'],
            env: [{ name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } }],
            volumeMounts: [
              { name: "settings", mountPath: "/etc/settings" },
              { name: "creds", mountPath: "/etc/creds" },
              { name: "podinfo", mountPath: "/etc/podinfo" },
            ],
          }],
          volumes: [
            { name: "settings", configMap: { name: "settings" } },
            { name: "creds", secret: { secretName: "creds" } },
            {
              name: "podinfo",
              downwardAPI: { items: [{ path: "name", fieldRef: { fieldPath: "metadata.name" } }] },
            },
          ],
        },
      },
    },
  };
}
