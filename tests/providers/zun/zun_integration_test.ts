/**
 * The zun provider against the local control plane and a real Zun (zun-api and zun-compute
 * 18.0.0 on podman, tools/harness/zun.ts), all through `kubectl`: a 2-replica Deployment of
 * two-container pods becomes two Running capsules labelled with their pods, with podman
 * addresses as pod IPs; scaling to 3 makes one more; `kubectl logs` answers 501 naming why;
 * scaling to 0 deletes the capsules. (One-container pods run as plain containers:
 * metrics_test.ts.)
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { useCluster } from "../../../tools/cluster/harness.ts";
import { startVkubelet } from "../../../tools/cluster/vkubelet.ts";
import { eventually } from "../../../tools/harness/wait.ts";
import { useZun, zunSkipReason } from "../../../tools/harness/zun.ts";
import { loadCredentials } from "../../../providers/zun/credentials.ts";
import { ZunApi } from "../../../providers/zun/client/zun_api.ts";
import { LABELS } from "../../../providers/zun/request/capsule.ts";
import type { ZunCapsule } from "../../../providers/zun/status.ts";

const skip = await zunSkipReason();

Deno.test({
  name: "zun provider: a Deployment rolls out, scales and is deleted as Zun capsules",
  ignore: skip !== undefined,
  async fn(t) {
    const zun = await useZun();
    const cluster = await useCluster();
    const nodeName = `vk-zun-${crypto.randomUUID().slice(0, 6)}`;
    const ns = await cluster.newNamespace("zun");
    const kubectl = cluster.kubectlIn(ns);
    const api = new ZunApi({
      credentials: loadCredentials(undefined, {
        env: (name) => zun.env[name],
        readFile: () => undefined,
        cwd: "/",
      }),
      serviceType: "container",
      requestTimeoutMs: 30_000,
    });
    const capsules = async (): Promise<ZunCapsule[]> =>
      (await api.call<{ capsules: ZunCapsule[] }>("GET", "/capsules/?limit=1000")).body.capsules
        .filter((c) => c.labels?.[LABELS.node] === nodeName);
    const node = await startVkubelet(cluster, {
      nodeName,
      provider: "zun",
      providerConfig: JSON.stringify({ statusInterval: "1s", exposePorts: false }),
      env: zun.env,
    });
    const pods = async (): Promise<Pod[]> =>
      (JSON.parse(await kubectl(["get", "pods", "-l", "app=web", "-o", "json"])).items as Pod[])
        .filter((p) => !p.metadata?.deletionTimestamp);
    const scale = (n: number) => kubectl(["scale", "deployment/web", `--replicas=${n}`]);
    try {
      await t.step("a 2-replica Deployment runs as 2 capsules", async () => {
        await kubectl(
          ["apply", "-f", "-"],
          JSON.stringify({
            apiVersion: "apps/v1",
            kind: "Deployment",
            metadata: { name: "web" },
            spec: {
              replicas: 2,
              selector: { matchLabels: { app: "web" } },
              template: {
                metadata: { labels: { app: "web" } },
                spec: {
                  nodeSelector: { "kubernetes.io/hostname": nodeName },
                  tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
                  terminationGracePeriodSeconds: 1,
                  containers: ["main", "side"].map((name) => ({
                    name,
                    image: "localhost/busybox:latest",
                    command: ["sh", "-c", "echo hello; exec sleep 3600"],
                    resources: { limits: { cpu: "100m", memory: "32Mi" } },
                  })),
                },
              },
            },
          }),
        );
        await kubectl(["rollout", "status", "deployment/web", "--timeout=240s"]);
        const running = await pods();
        assert.equal(running.length, 2);
        const made = await capsules();
        for (const pod of running) {
          assert.equal(pod.status?.phase, "Running");
          assert.match(pod.status?.podIP ?? "", /^198\.19\.88\.\d+$/, "the pod IP is podman's");
          const capsule = made.find((c) => c.labels?.[LABELS.uid] === pod.metadata?.uid);
          assert.ok(capsule, `no capsule for ${pod.metadata?.name}`);
          assert.equal(capsule.status, "Running");
          assert.equal(capsule.name, `${ns}.${pod.metadata?.name}`);
          const synced = pod.status?.conditions?.find((c) =>
            c.type === "zun.vkubelet.io/ContainerStatusSynced"
          );
          assert.equal(synced?.status, "False", "the pod says Zun does not re-read containers");
        }
      });

      await t.step("kubectl logs answers that Zun keeps no logs for a capsule", async () => {
        const [pod] = await pods();
        const err = await kubectl(["logs", pod.metadata!.name!, "-c", "main"])
          .then(() => "", (e) => String(e));
        assert.match(err, /Zun keeps no logs/);
      });

      await t.step("scaling to 3 makes one more capsule", async () => {
        await scale(3);
        await kubectl(["rollout", "status", "deployment/web", "--timeout=240s"]);
        assert.equal((await pods()).length, 3);
        await eventually(
          "3 running capsules",
          async () => (await capsules()).filter((c) => c.status === "Running").length === 3,
          60_000,
        );
      });

      await t.step("scaling to 0 deletes every capsule", async () => {
        await scale(0);
        await eventually("no pods left", async () => (await pods()).length === 0, 240_000);
        await eventually("no capsules left", async () => (await capsules()).length === 0, 120_000);
      });
    } finally {
      const said = node.output().split("\n").filter((l) => /warn|error|fail/i.test(l));
      if (said.length) console.error(`vkubelet's warnings:\n${said.slice(-30).join("\n")}`);
      await node.stop();
      await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]).catch(() => {});
      await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]).catch(() => {});
      for (const c of await capsules().catch(() => [])) {
        await api.call("DELETE", `/capsules/${c.uuid}`).catch(() => {});
      }
      await zun.stop();
    }
  },
});
