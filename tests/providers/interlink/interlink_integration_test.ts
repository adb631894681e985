/**
 * `--provider interlink` (target plugin) against the local control plane and the reference
 * plugin, through kubectl, twice: over a unix socket to the plugin as it is, and over TCP to the
 * plugin answering as the real SLURM plugin does (`realLike`, ./_real_like.ts: empty states for
 * pods it has no job for, a 10 s status copy, no init-container states, empty-body create
 * failures). A Deployment runs as plugin jobs, `kubectl logs` reads them, `kubectl exec` answers
 * that the backend has no exec; the plugin killed mid-rollout and started again loses and
 * duplicates no pod; a job that ends follows the restart policy; scale to 0 leaves the plugin
 * with no job. SLURM-like, also: init containers are shown completed, a downwardAPI volume reaches
 * the plugin as a projected map, and a create the plugin cannot make fails the pod
 * (`ProviderFailed`) instead of leaving it ContainerCreating.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { useCluster } from "../../../tools/cluster/harness.ts";
import { startVkubelet } from "../../../tools/cluster/vkubelet.ts";
import { eventually } from "../../../tools/harness/wait.ts";
import { startPlugin } from "./_plugin.ts";

for (const realLike of [false, true]) {
  const mode = realLike ? "a SLURM-like plugin" : "the reference plugin";
  Deno.test(`interlink provider: pods run as jobs of ${mode} and follow the API`, async (t) => {
    await runIntegration(t, realLike);
  });
}

async function runIntegration(t: Deno.TestContext, realLike: boolean): Promise<void> {
  const cluster = await useCluster();
  const plugin = await startPlugin(realLike ? { realLike: true } : { socket: true });
  const nodeName = `vk-interlink-${crypto.randomUUID().slice(0, 6)}`;
  const ns = await cluster.newNamespace("interlink");
  const kubectl = cluster.kubectlIn(ns);
  let node = await startVkubelet(cluster, {
    nodeName,
    provider: "interlink",
    providerConfig: JSON.stringify({
      target: "plugin",
      ...(realLike ? { url: plugin.url } : { socket: plugin.socket }),
      statusInterval: "500ms",
      requestTimeout: "5s",
      capacity: { cpu: "64", memory: "256Gi", pods: "300" },
    }),
  });
  const placement = {
    nodeSelector: { "kubernetes.io/hostname": nodeName },
    tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
  };
  const deployment = (replicas: number) =>
    JSON.stringify({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web" },
      spec: {
        replicas,
        selector: { matchLabels: { app: "web" } },
        template: {
          metadata: { labels: { app: "web" } },
          spec: {
            ...placement,
            terminationGracePeriodSeconds: 2,
            containers: [{
              name: "main",
              image: "busybox",
              command: ["/bin/sh", "-c", 'echo "hello from $POD_NAME"; exec sleep 3600'],
              env: [{ name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } }],
            }],
          },
        },
      },
    });
  const pods = async (selector: string) => {
    const list = JSON.parse(await kubectl(["get", "pods", "-l", selector, "-o", "json"]));
    return (list.items as Pod[]).filter((p) => !p.metadata?.deletionTimestamp);
  };
  /** The pods the plugin holds, by uid (its state directory). */
  const jobs = async () => {
    const out: string[] = [];
    for await (const e of Deno.readDir(`${plugin.state}/pods`)) if (e.isDirectory) out.push(e.name);
    return out.sort();
  };
  try {
    await t.step("a Deployment of 3 runs as 3 plugin jobs; logs and exec", async () => {
      await kubectl(["apply", "-f", "-"], deployment(3));
      await kubectl(["rollout", "status", "deployment/web", "--timeout=90s"]);
      const running = await pods("app=web");
      assert.equal(running.length, 3);
      assert.deepEqual(await jobs(), running.map((p) => p.metadata!.uid!).sort());
      const name = running[0].metadata!.name!;
      const log = await eventually("the pod's log", async () => {
        const text = await kubectl(["logs", name]);
        return text.includes("hello") && text;
      });
      assert.equal(log.trim(), `hello from ${name}`, "the env var was resolved by vkubelet");
      const node = JSON.parse(await kubectl(["get", "node", nodeName, "-o", "json"]));
      // SLURM-like, the ping (a /status of no pods) reports the plugin's resources, which win
      // over the config's capacity (the reference plugin's: 110 pods).
      assert.equal(node.status.capacity.pods, realLike ? "110" : "300");
      const exec = await cluster.kubectl(["-n", ns, "exec", name, "--", "true"]);
      assert.notEqual(exec.code, 0);
      assert.match(
        exec.stderr,
        /exec is not supported by this node's provider: interLink's API has no exec call/,
      );
    });

    await t.step("the plugin killed mid-rollout: no pod lost or duplicated", async () => {
      await plugin.kill();
      await kubectl(["scale", "deployment/web", "--replicas=6"]);
      // vkubelet keeps retrying the creates it cannot make while the plugin is down.
      await new Promise((r) => setTimeout(r, 3000));
      await plugin.restart();
      await kubectl(["rollout", "status", "deployment/web", "--timeout=120s"]);
      const running = await pods("app=web");
      assert.equal(running.length, 6);
      assert.ok(running.every((p) => p.status?.phase === "Running"));
      assert.deepEqual(await jobs(), running.map((p) => p.metadata!.uid!).sort());
      const events = await kubectl([
        "get",
        "events",
        "--field-selector=reason=InterlinkCreateFailed",
      ]);
      assert.match(events, /does not answer/);
    });

    await t.step("vkubelet restarted: it adopts the jobs and starts none twice", async () => {
      const before = await jobs();
      await node.stop();
      node = await startVkubelet(cluster, { nodeName, provider: "interlink", like: node });
      await kubectl(["rollout", "status", "deployment/web", "--timeout=60s"]);
      assert.deepEqual(await jobs(), before);
    });

    await t.step("restartPolicy Never: an ended job ends the pod with its exit code", async () => {
      await kubectl(
        ["apply", "-f", "-"],
        JSON.stringify({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "once", labels: { app: "once" } },
          spec: {
            ...placement,
            restartPolicy: "Never",
            containers: [{ name: "main", image: "busybox", command: ["/bin/sh", "-c", "exit 3"] }],
          },
        }),
      );
      const done = await eventually("pod once Failed", async () => {
        const [p] = await pods("app=once");
        return p?.status?.phase === "Failed" && p;
      });
      assert.equal(done.status?.containerStatuses?.[0].state?.terminated?.exitCode, 3);
      await kubectl(["delete", "pod", "once", "--wait=true", "--timeout=30s"]);
    });

    await t.step({
      name: "SLURM-like: init containers completed, downwardAPI mounted, an unmakeable pod Failed",
      ignore: !realLike,
      fn: async () => {
        await kubectl(
          ["apply", "-f", "-"],
          JSON.stringify({
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name: "setup", labels: { app: "setup" } },
            spec: {
              ...placement,
              initContainers: [{ name: "init", image: "busybox", command: ["true"] }],
              containers: [{
                name: "main",
                image: "busybox",
                command: ["/bin/sh", "-c", "exec sleep 3600"],
                volumeMounts: [{ name: "podinfo", mountPath: "/etc/podinfo" }],
              }],
              volumes: [{
                name: "podinfo",
                downwardAPI: {
                  items: [{ path: "name", fieldRef: { fieldPath: "metadata.name" } }],
                },
              }],
            },
          }),
        );
        const running = await eventually("pod setup Running", async () => {
          const [p] = await pods("app=setup");
          return p?.status?.phase === "Running" && p;
        }, 60_000);
        const init = running.status?.initContainerStatuses?.[0];
        assert.equal(init?.state?.terminated?.reason, "Completed");
        const file = `${plugin.state}/pods/${running.metadata!.uid}/volumes/podinfo/name`;
        assert.equal(
          await Deno.readTextFile(file),
          "setup",
          "the downwardAPI file reached the plugin",
        );

        await kubectl(
          ["apply", "-f", "-"],
          JSON.stringify({
            apiVersion: "v1",
            kind: "Pod",
            metadata: {
              name: "noscript",
              labels: { app: "noscript" },
              annotations: { "vkubelet.test/create": "empty-body" },
            },
            spec: {
              ...placement,
              containers: [{ name: "main", image: "busybox", command: ["true"] }],
            },
          }),
        );
        const failed = await eventually("pod noscript Failed", async () => {
          const [p] = await pods("app=noscript");
          return p?.status?.phase === "Failed" && p;
        }, 90_000);
        assert.equal(failed.status?.reason, "ProviderFailed");
        assert.match(failed.status?.message ?? "", /refused to create the pod 3 times.*empty body/);
        assert.equal(plugin.realLike?.refusedCreates, 3);
        await kubectl(["delete", "pod", "setup", "noscript", "--wait=true", "--timeout=60s"]);
      },
    });

    await t.step("scale to 0 deletes every job", async () => {
      await kubectl(["scale", "deployment/web", "--replicas=0"]);
      await eventually(
        "no pods and no jobs",
        async () => (await pods("app=web")).length === 0 && (await jobs()).length === 0,
      );
    });
  } finally {
    await node.stop();
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    await plugin.stop();
  }
}
