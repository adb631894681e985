/**
 * Ephemeral containers with the mock provider against the real control plane, through `main.ts`:
 * `kubectl debug` adds one, it runs and is reported in `status.ephemeralContainerStatuses`, and
 * `kubectl debug -i` attaches to it instead of hanging.
 * @module
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { useCluster } from "../../../tools/cluster/harness.ts";
import { startVkubelet } from "../../../tools/cluster/vkubelet.ts";
import { eventually } from "../../../tools/harness/wait.ts";

Deno.test("ephemeral containers: kubectl debug runs one on the mock; kubectl debug -i attaches", async (t) => {
  const cluster = await useCluster();
  const nodeName = `vk-debug-${crypto.randomUUID().slice(0, 6)}`;
  const ns = await cluster.newNamespace("mock-debug");
  const kubectl = cluster.kubectlIn(ns);
  const vk = await startVkubelet(cluster, { nodeName });
  try {
    await kubectl([
      "run",
      "web",
      "--image=busybox",
      `--overrides=${
        JSON.stringify({
          spec: {
            nodeName,
            tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
          },
        })
      }`,
      "--",
      "sleep",
      "3600",
    ]);
    await kubectl(["wait", "--for=condition=Ready", "pod/web", "--timeout=60s"]);

    await t.step("kubectl debug: the ephemeral container runs and has a status", async () => {
      await kubectl([
        "debug",
        "pod/web",
        "--image=busybox",
        "--target=web",
        "-c",
        "dbg",
        "--",
        "sleep",
        "3600",
      ]);
      const status = await eventually("the ephemeral container running", async () => {
        const pod: Pod = JSON.parse(await kubectl(["get", "pod", "web", "-o", "json"]));
        const found = pod.status?.ephemeralContainerStatuses?.find((s) => s.name === "dbg");
        return found?.state?.running ? found : undefined;
      });
      assert.equal(status.image, "busybox");
      assert.equal(status.ready, false);
      const pod: Pod = JSON.parse(await kubectl(["get", "pod", "web", "-o", "json"]));
      assert.equal(pod.status?.phase, "Running");
      const logs = await kubectl(["logs", "web", "-c", "dbg"]);
      assert.match(logs, /dbg/);
    });

    await t.step("kubectl debug -i attaches to the new container and ends with stdin", async () => {
      const out = await cluster.kubectl(
        ["-n", ns, "debug", "-i", "pod/web", "--image=busybox", "-c", "dbg2", "--", "sh"],
        { stdin: "hello from stdin\n", signal: AbortSignal.timeout(90_000) },
      );
      assert.equal(out.code, 0, out.stderr);
      assert.match(out.stdout, /hello from stdin/);
    });
  } finally {
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    const { code } = await vk.stop("SIGTERM");
    assert.equal(code, 0, vk.output());
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
  }
});
