/**
 * The liveness probe of deploy/kubernetes/workload.yaml (the chart's default), run as the
 * kubelet runs it (pkg/probe/http, pkg/probe/tcp in kubernetes/kubernetes: an HTTP GET counts
 * 200-399 within timeoutSeconds, a TCP probe only connects) against a real vkubelet: it passes
 * while vkubelet runs and fails while its process is stopped, where a TCP connect still succeeds
 * because the kernel completes the handshake for a listener that never answers.
 */
import assert from "node:assert/strict";
import { connect } from "node:net";
import { request } from "node:http";
import { parseAllDocuments } from "yaml";
import { useCluster } from "../../tools/cluster/harness.ts";
import { freePort } from "../../tools/cluster/ports.ts";
import { manifestsDir } from "../../tools/helm/manifests.ts";
import { VKUBELET_PERMISSIONS } from "../../scripts/permissions.ts";
import { spawnVkubelet } from "./_helpers.ts";

interface Probe {
  httpGet?: { path: string; port: string };
  tcpSocket?: { port: string };
  timeoutSeconds?: number;
}

/** One probe attempt as the kubelet makes it: true for success. */
function runProbe(probe: Probe, port: number): Promise<boolean> {
  const timeout = (probe.timeoutSeconds ?? 1) * 1000;
  return new Promise((resolve) => {
    if (probe.tcpSocket) {
      const socket = connect({ host: "127.0.0.1", port, timeout }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.on("timeout", () => (socket.destroy(), resolve(false)));
      socket.on("error", () => resolve(false));
      return;
    }
    const req = request(
      { host: "127.0.0.1", port, path: probe.httpGet!.path, timeout },
      (res) => {
        res.resume();
        res.on("end", () => resolve((res.statusCode ?? 0) >= 200 && res.statusCode! < 400));
      },
    );
    req.on("timeout", () => (req.destroy(), resolve(false)));
    req.on("error", () => resolve(false));
    req.end();
  });
}

Deno.test("the liveness probe fails while vkubelet's process does not answer", async () => {
  const [deployment] = parseAllDocuments(
    await Deno.readTextFile(`${manifestsDir}/workload.yaml`),
  ).map((d) => d.toJS());
  const container = deployment.spec.template.spec.containers[0];
  const probe = container.livenessProbe as Probe;
  const probePort = probe.httpGet?.port ?? probe.tcpSocket?.port;
  assert.equal(probePort, "metrics", "the probe uses the metrics listener");
  const cluster = await useCluster();
  const nodeName = `vk-probe-${crypto.randomUUID().slice(0, 6)}`;
  const metricsPort = freePort();
  const vk = await spawnVkubelet(cluster, nodeName, Deno.execPath(), [
    "run",
    "--no-prompt",
    ...VKUBELET_PERMISSIONS,
    new URL("../../main.ts", import.meta.url).pathname,
    `--nodename=${nodeName}`,
    "--provider=mock",
    `--kubeconfig=${await cluster.nodeKubeconfig(nodeName)}`,
    "--node-ip=127.0.0.1",
    "--listen-address=127.0.0.1",
    `--port=${freePort()}`,
    "--tls-self-signed",
    `--metrics-addr=127.0.0.1:${metricsPort}`,
  ]);
  try {
    assert.equal(await runProbe(probe, metricsPort), true, "alive while it answers");
    vk.kill("SIGSTOP");
    try {
      assert.equal(await runProbe({ tcpSocket: { port: "metrics" } }, metricsPort), true);
      assert.equal(await runProbe(probe, metricsPort), false, "dead while it cannot answer");
    } finally {
      vk.kill("SIGCONT");
    }
    assert.equal(await runProbe(probe, metricsPort), true, "alive again");
  } finally {
    await vk.stop();
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
  }
});
