/**
 * The mock provider's test hooks against the real control plane, through `main.ts`: Jobs whose
 * pods exit with a code, and a container that cannot start, as `kubectl` shows them.
 * @module
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { useCluster } from "../../../tools/cluster/harness.ts";
import { startVkubelet } from "../../../tools/cluster/vkubelet.ts";
import { freePort } from "../../../tools/cluster/ports.ts";
import { eventually } from "../../../tools/harness/wait.ts";

Deno.test("mock hooks: a Job exiting 3 fails with exit code 3, one exiting 0 completes, a start error waits", async (t) => {
  const cluster = await useCluster();
  const nodeName = `vk-mock-hooks-${crypto.randomUUID().slice(0, 6)}`;
  const ns = await cluster.newNamespace("mock-hooks");
  const kubectl = cluster.kubectlIn(ns);
  const placement = {
    nodeSelector: { "kubernetes.io/hostname": nodeName },
    tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
  };
  const job = (name: string, exit: string) => ({
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name },
    spec: {
      backoffLimit: 0,
      template: {
        metadata: { annotations: { "mock.vkubelet.io/exit": exit } },
        spec: {
          ...placement,
          restartPolicy: "Never",
          containers: [{ name: "main", image: "busybox", command: ["sh", "-c", "exit"] }],
        },
      },
    },
  });
  /** The Job's pod as `kubectl get pod -o json` shows it, once it reached `phase`. */
  const jobPod = (name: string, phase: string) =>
    eventually(`the pod of job ${name} to be ${phase}`, async () => {
      const list = JSON.parse(
        await kubectl(["get", "pod", "-l", `job-name=${name}`, "-o", "json"]),
      );
      const pod: Pod | undefined = list.items[0];
      return pod?.status?.phase === phase ? pod : undefined;
    });
  const metricsPort = freePort();
  const vk = await startVkubelet(cluster, {
    nodeName,
    args: [`--metrics-addr=127.0.0.1:${metricsPort}`, "--node-lease-renew-interval=1s"],
  });
  try {
    await kubectl(["apply", "-f", "-"], JSON.stringify(job("fails", "main=3@1s")));
    await kubectl(["apply", "-f", "-"], JSON.stringify(job("completes", "main=0@1s")));

    await t.step(
      "exit 3 under restartPolicy Never: pod Failed, exitCode 3, Job failed",
      async () => {
        const pod = await jobPod("fails", "Failed");
        const [main] = pod.status!.containerStatuses!;
        assert.equal(main.state?.terminated?.exitCode, 3);
        assert.equal(main.state?.terminated?.reason, "Error");
        assert.equal(main.restartCount, 0);
        await kubectl(["wait", "--for=condition=failed", "job/fails", "--timeout=60s"]);
      },
    );

    await t.step("exit 0: pod Succeeded with reason Completed, Job complete", async () => {
      const pod = await jobPod("completes", "Succeeded");
      const [main] = pod.status!.containerStatuses!;
      assert.equal(main.state?.terminated?.exitCode, 0);
      assert.equal(main.state?.terminated?.reason, "Completed");
      await kubectl(["wait", "--for=condition=complete", "job/completes", "--timeout=60s"]);
    });

    await t.step(
      "--metrics-addr: plain /metrics counts them by phase, /healthz is ok",
      async () => {
        const base = `http://127.0.0.1:${metricsPort}`;
        await eventually("vkubelet_pods to count the finished Jobs' pods", async () => {
          const text =
            await (await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
          return text.includes('vkubelet_pods{phase="Failed"} 1') &&
              text.includes('vkubelet_pods{phase="Succeeded"} 1')
            ? true
            : undefined;
        });
        const text = await (await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(5_000) }))
          .text();
        // Its own API requests by verb and code, and lease renewals, are counted too.
        assert.match(text, /vkubelet_kube_api_requests_total\{verb="GET",code="200"\} [1-9]/);
        assert.match(text, /vkubelet_kube_api_requests_total\{verb="WATCH",code="200"\} [1-9]/);
        assert.match(
          text,
          /vkubelet_lease_renewal_duration_seconds_count\{result="success"\} [1-9]/,
        );
        assert.match(text, /vkubelet_pod_sync_duration_seconds_count\{result="success"\} [1-9]/);
        const healthz = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(5_000) });
        assert.equal(healthz.status, 200);
        assert.equal(await healthz.text(), "ok\n");
        const other = await fetch(`${base}/pods`, { signal: AbortSignal.timeout(5_000) });
        assert.equal(other.status, 404);
        await other.body?.cancel();
      },
    );

    await t.step("start error: Pending, waiting CreateContainerError, a Failed event", async () => {
      await kubectl(
        ["apply", "-f", "-"],
        JSON.stringify({
          apiVersion: "v1",
          kind: "Pod",
          metadata: {
            name: "cannot-start",
            annotations: { "mock.vkubelet.io/start-error": "main=no such binary" },
          },
          spec: { ...placement, containers: [{ name: "main", image: "busybox" }] },
        }),
      );
      const waiting = await eventually(
        "the container to wait in CreateContainerError",
        async () => {
          const pod: Pod = JSON.parse(await kubectl(["get", "pod", "cannot-start", "-o", "json"]));
          const state = pod.status?.containerStatuses?.[0]?.state?.waiting;
          return state?.reason === "CreateContainerError" && pod.status?.phase === "Pending"
            ? state
            : undefined;
        },
      );
      assert.equal(waiting.message, "no such binary");
      await eventually("a Failed event", async () => {
        const events = await kubectl([
          "get",
          "events",
          "--field-selector",
          "involvedObject.name=cannot-start,reason=Failed",
          "-o",
          "jsonpath={.items[*].message}",
        ]);
        return events.includes("no such binary") ? true : undefined;
      });
    });
  } finally {
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    const { code } = await vk.stop("SIGTERM");
    assert.equal(code, 0, vk.output());
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
  }
});
