/**
 * Ephemeral containers with the process provider against the real control plane, through
 * `main.ts`: `kubectl debug` starts a process for the pod with logs and exec, and
 * `kubectl debug -i` attaches to one.
 * @module
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { useCluster } from "../../../tools/cluster/harness.ts";
import { startVkubelet } from "../../../tools/cluster/vkubelet.ts";
import { killMarkedProcesses } from "../../../tools/harness/processes.ts";
import { eventually } from "../../../tools/harness/wait.ts";

Deno.test("process provider: kubectl debug runs an ephemeral container with logs, exec and attach", async (t) => {
  const cluster = await useCluster();
  const nodeName = `vk-pdebug-${crypto.randomUUID().slice(0, 6)}`;
  const ns = await cluster.newNamespace("process-debug");
  const stateDir = await Deno.makeTempDir({ prefix: "vk-pdebug-" });
  const kubectl = cluster.kubectlIn(ns);
  const vk = await startVkubelet(cluster, {
    nodeName,
    provider: "process",
    providerConfig: JSON.stringify({ stateDir, cgroups: "off" }),
  });
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
      "--command",
      "--",
      "sleep",
      "3600",
    ]);
    await kubectl(["wait", "--for=condition=Ready", "pod/web", "--timeout=60s"]).catch(
      async (err) => {
        console.log(await kubectl(["get", "pod", "web", "-o", "json"]), vk.output().slice(-3000));
        throw err;
      },
    );

    await t.step("kubectl debug: running, with logs and exec", async () => {
      await kubectl([
        "debug",
        "pod/web",
        "--image=busybox",
        "-c",
        "dbg",
        "--",
        "sh",
        "-c",
        "echo from-debug; exec sleep 3600",
      ]);
      const status = await eventually("the ephemeral container running", async () => {
        const pod: Pod = JSON.parse(await kubectl(["get", "pod", "web", "-o", "json"]));
        const found = pod.status?.ephemeralContainerStatuses?.find((s) => s.name === "dbg");
        return found?.state?.running ? found : undefined;
      });
      assert.equal(status.ready, false);
      await eventually(
        "its log line",
        async () =>
          (await kubectl(["logs", "web", "-c", "dbg"])).includes("from-debug") ? true : undefined,
      );
      assert.equal((await kubectl(["exec", "web", "-c", "dbg", "--", "echo", "hi"])).trim(), "hi");
      const pod: Pod = JSON.parse(await kubectl(["get", "pod", "web", "-o", "json"]));
      assert.equal(pod.status?.phase, "Running");
      assert.ok(pod.status?.containerStatuses?.[0].state?.running, "the pod's container runs on");
    });

    await t.step(
      "kubectl debug -i: stdin reaches the new container and its output comes back",
      async () => {
        // stdin stays open until the echo has come back: the session ends with stdin.
        const child = new Deno.Command(cluster.binary, {
          args: [
            "kubectl",
            `--kubeconfig=${cluster.kubeconfigPath}`,
            "-n",
            ns,
            "debug",
            "-i",
            "pod/web",
            "--image=busybox",
            "-c",
            "dbg2",
            "--",
            "cat",
          ],
          stdin: "piped",
          stdout: "piped",
          stderr: "null",
        }).spawn();
        const writer = child.stdin.getWriter();
        const line = new TextEncoder().encode("hello from stdin\n");
        const ticker = setInterval(() => writer.write(line).catch(() => {}), 500);
        const timeout = setTimeout(() => child.kill("SIGKILL"), 60_000);
        let out = "";
        try {
          for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
            out += chunk;
            if (out.includes("hello from stdin")) break;
          }
        } finally {
          clearInterval(ticker);
          clearTimeout(timeout);
          await writer.close().catch(() => {});
          await child.status;
        }
        assert.match(out, /hello from stdin/);
      },
    );
  } finally {
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    const { code } = await vk.stop("SIGTERM");
    assert.equal(code, 0, vk.output());
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
    // A stopped vkubelet leaves its pods running (as on a restart): end them with the test.
    await killMarkedProcesses({ cmdline: `${stateDir}/` });
    await Deno.remove(stateDir, { recursive: true }).catch(() => {});
  }
});
