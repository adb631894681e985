/**
 * Lifecycle hooks through interLink's real SLURM plugin (tools/harness/interlink_slurm/, built
 * from its source at f8451d93): vkubelet's interlink provider → interLink's API server
 * (tools/harness/interlink/) → the plugin on a unix socket → Debian's SLURM (tools/harness/slurm.ts),
 * containers through the singularity stand-in. The provider declares `hooks: "backend"`, so the
 * plugin gets the pod's `lifecycle` and puts the postStart hook in the job before the container
 * (pkg/slurm/hooks.go `generatePostStartScript`); the container waits for the file the hook
 * writes. Once with the provider alone, once with vkubelet as a node of the local control plane
 * (the pod as the API server has it, through kubectl). Needs root (SLURM, the stand-in's mount
 * namespace); skipped, saying why, without the plugin's binary or source.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { getLogger } from "../../../base/log.ts";
import type { ProviderDeps } from "../../../provider/mod.ts";
import { createProvider } from "../../../providers/interlink/mod.ts";
import { startInterlinkServer } from "../../../tools/harness/interlink/interlink.ts";
import {
  ensureSlurmPlugin,
  startSlurmPlugin,
} from "../../../tools/harness/interlink_slurm/plugin.ts";
import { startSlurm } from "../../../tools/harness/slurm.ts";
import { useCluster } from "../../../tools/cluster/harness.ts";
import { startVkubelet } from "../../../tools/cluster/vkubelet.ts";

const plugin = Deno.uid() === 0 ? await ensureSlurmPlugin() : { missing: "needs root" };

function hookPod(): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { namespace: "default", name: "hook-file", uid: crypto.randomUUID() },
    spec: {
      nodeName: "vk-slurm-plugin",
      restartPolicy: "Never",
      terminationGracePeriodSeconds: 2,
      containers: [{
        name: "main",
        image: "busybox:1.36",
        // Waits up to 20 s for the file the postStart hook writes; without it, exit 1.
        command: [
          "/bin/sh",
          "-c",
          "for i in $(seq 1 40); do [ -f /tmp/ready ] && { cat /tmp/ready; exit 0; }; sleep 0.5; done; exit 1",
        ],
        lifecycle: {
          postStart: {
            exec: { command: ["/bin/sh", "-c", "echo written by postStart > /tmp/ready"] },
          },
        },
      }],
    },
  };
}

Deno.test({
  name:
    "through interLink's SLURM plugin, a pod whose postStart hook writes the file its container waits for completes with exit 0",
  ignore: "missing" in plugin,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    if (!("path" in plugin)) return;
    const slurm = await startSlurm({ cpus: 2, memoryMiB: 2000 });
    const stop = new AbortController();
    try {
      await using il = await startSlurmPlugin(plugin.path, slurm);
      await using server = await startInterlinkServer({ pluginUrl: il.url });
      const deps: ProviderDeps = {
        nodeName: "vk-slurm-plugin",
        log: getLogger(["vkubelet", "provider", "test"]),
        clock: realClock,
        internalIp: "127.0.0.1",
        daemonPort: 10250,
        signal: stop.signal,
      };
      const provider = createProvider(
        { target: "interlink", url: server.url, statusInterval: "500ms" },
        deps,
      );
      try {
        const pod = hookPod();
        await provider.createPod(pod, {});
        const deadline = Date.now() + 90_000;
        let got: Pod | undefined;
        while (Date.now() < deadline) {
          got = await provider.getPod("default", "hook-file", {});
          if (got?.status?.phase === "Succeeded" || got?.status?.phase === "Failed") break;
          await new Promise((r) => setTimeout(r, 500));
        }
        const jobDir = `${il.dataRoot}default-${pod.metadata!.uid}`;
        const out = await Deno.readTextFile(`${jobDir}/run-main.out`).catch(() => "");
        const state = got?.status?.containerStatuses?.[0]?.state;
        assert.equal(
          state?.terminated?.exitCode,
          0,
          `the container did not complete with exit 0 (phase ${got?.status?.phase}, state ${
            JSON.stringify(state)
          }); its output:\n${out}`,
        );
        assert.equal(got?.status?.phase, "Succeeded");
        assert.match(out, /Running postStart hook for container main/);
        assert.match(out, /written by postStart/);
        await provider.deletePod(pod, {});
      } finally {
        await provider.close?.();
      }
    } finally {
      stop.abort();
      await slurm.stop();
    }
  },
});

Deno.test({
  name:
    "vkubelet as a node, through interLink's SLURM plugin: the postStart pod of kubectl apply completes with exit 0",
  ignore: "missing" in plugin,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    if (!("path" in plugin)) return;
    const cluster = await useCluster();
    const slurm = await startSlurm({ cpus: 2, memoryMiB: 2000 });
    try {
      await using il = await startSlurmPlugin(plugin.path, slurm);
      await using server = await startInterlinkServer({ pluginUrl: il.url });
      const nodeName = `vk-slurmplugin-${crypto.randomUUID().slice(0, 6)}`;
      const ns = await cluster.newNamespace("hooks");
      const kubectl = cluster.kubectlIn(ns);
      const node = await startVkubelet(cluster, {
        nodeName,
        provider: "interlink",
        providerConfig: JSON.stringify({
          target: "interlink",
          url: server.url,
          statusInterval: "1s",
        }),
      });
      try {
        const pod = hookPod();
        pod.metadata = { name: "hook-file" };
        pod.spec!.nodeName = nodeName;
        await kubectl(["apply", "-f", "-"], JSON.stringify(pod));
        const deadline = Date.now() + 120_000;
        let got: Pod | undefined;
        while (Date.now() < deadline) {
          got = JSON.parse(await kubectl(["get", "pod", "hook-file", "-o", "json"]));
          if (got?.status?.phase === "Succeeded" || got?.status?.phase === "Failed") break;
          await new Promise((r) => setTimeout(r, 1_000));
        }
        const out = await Deno.readTextFile(
          `${il.dataRoot}${ns}-${got?.metadata?.uid}/run-main.out`,
        ).catch(() => "");
        const state = got?.status?.containerStatuses?.[0]?.state;
        assert.equal(
          state?.terminated?.exitCode,
          0,
          `the container did not complete with exit 0 (phase ${got?.status?.phase}, state ${
            JSON.stringify(state)
          }); its output:\n${out}`,
        );
        assert.equal(got?.status?.phase, "Succeeded");
        assert.match(out, /Running postStart hook for container main/);
        await kubectl(["delete", "pod", "hook-file", "--wait=false"]);
      } finally {
        await node.stop();
        await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
        await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
      }
    } finally {
      await slurm.stop();
    }
  },
});
