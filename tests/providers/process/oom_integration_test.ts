/**
 * Memory limits enforced by the process provider against the real control plane, through
 * `main.ts`: a container limited to 50Mi that allocates 200 MB is killed by the kernel's OOM
 * killer and reported `OOMKilled` with exit code 137, as a kubelet reports it. Runs on whatever
 * this host has (cgroup v2, or the v1 memory/cpu/cpuacct hierarchies) under a cgroup root of its
 * own, removed afterwards; skipped (with the reason) without root or usable cgroups.
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { useCluster } from "../../../tools/cluster/harness.ts";
import { startVkubelet } from "../../../tools/cluster/vkubelet.ts";

const cgroupRoot = `/sys/fs/cgroup/vkubelet-oom-${crypto.randomUUID().slice(0, 6)}`;

/** The directories a probe of `cgroupRoot` creates, for removal. */
function rootDirs(): string[] {
  const [mount, name] = ["/sys/fs/cgroup", cgroupRoot.split("/").pop()!];
  return [cgroupRoot, ...["memory", "cpu", "cpuacct"].map((c) => join(mount, c, name))];
}

async function removeRoots(): Promise<void> {
  for (const dir of rootDirs()) await Deno.remove(dir).catch(() => {});
}

/** Why this host cannot run the test: checked on the host itself, not with the provider's probe. */
async function whyNot(): Promise<string | undefined> {
  if (Deno.build.os !== "linux") return "cgroups need Linux";
  if (Deno.uid() !== 0) return "creating cgroups needs root";
  const exists = (path: string) => Deno.stat(path).then(() => true, () => false);
  const v2 = await exists("/sys/fs/cgroup/cgroup.controllers") &&
    /\bmemory\b/.test(await Deno.readTextFile("/sys/fs/cgroup/cgroup.controllers"));
  const v1 = await exists("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  return v1 || v2 ? undefined : "this host has no cgroup memory controller at /sys/fs/cgroup";
}

const skip = await whyNot();
if (skip) console.warn(`skipping the OOMKilled test: ${skip}`);

Deno.test({
  name: "process provider: a 50Mi container allocating 200 MB ends OOMKilled, exit code 137",
  ignore: skip !== undefined,
  async fn() {
    const cluster = await useCluster();
    const nodeName = `vk-oom-${crypto.randomUUID().slice(0, 6)}`;
    const ns = await cluster.newNamespace("process-oom");
    const stateDir = await Deno.makeTempDir({ prefix: "vk-oom-" });
    const kubectl = cluster.kubectlIn(ns);
    const vk = await startVkubelet(cluster, {
      nodeName,
      provider: "process",
      providerConfig: JSON.stringify({ stateDir, cgroups: "required", cgroupRoot }),
    });
    try {
      await kubectl(
        ["create", "-f", "-"],
        JSON.stringify({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "hog" },
          spec: {
            nodeSelector: { "kubernetes.io/hostname": nodeName },
            tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
            restartPolicy: "Never",
            containers: [{
              name: "main",
              image: "busybox",
              // tail -c keeps the last N bytes of a pipe in memory: 200 MB.
              command: ["sh", "-c", "head -c 209715200 /dev/zero | tail -c 209715200 >/dev/null"],
              resources: { limits: { memory: "50Mi", cpu: "500m" } },
            }],
          },
        }),
      );
      const deadline = Date.now() + 90_000;
      let pod: Pod | undefined;
      while (Date.now() < deadline) {
        pod = JSON.parse(await kubectl(["get", "pod", "hog", "-o", "json"]));
        if (pod?.status?.phase === "Failed" || pod?.status?.phase === "Succeeded") break;
        await new Promise((r) => setTimeout(r, 500));
      }
      const terminated = pod?.status?.containerStatuses?.[0].state?.terminated;
      assert.equal(pod?.status?.phase, "Failed", JSON.stringify(pod?.status));
      assert.equal(terminated?.reason, "OOMKilled");
      assert.equal(terminated?.exitCode, 137);
    } finally {
      await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
      const { code } = await vk.stop("SIGTERM");
      assert.equal(code, 0, vk.output());
      await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
      await Deno.remove(stateDir, { recursive: true }).catch(() => {});
      await removeRoots();
    }
  },
});
