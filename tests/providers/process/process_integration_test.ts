/**
 * The process provider against the real control plane, through `main.ts`: issue 8's "What
 * must show". Prints the start-up latency and vkubelet's memory per running pod.
 */
import assert from "node:assert/strict";
import { useCluster } from "../../../tools/cluster/harness.ts";
import { type RunningVkubelet, startVkubelet } from "../../../tools/cluster/vkubelet.ts";
import { eventually } from "../../../tools/harness/wait.ts";

const NODE = "vk-process-it";

function toleration() {
  return {
    nodeSelector: { "kubernetes.io/hostname": NODE },
    tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
  };
}

function rssKiB(pid: number): number {
  const match = /VmRSS:\s+(\d+)/.exec(Deno.readTextFileSync(`/proc/${pid}/status`));
  return Number(match?.[1] ?? 0);
}

Deno.test("process provider: Job logs, ready Deployment with ConfigMap, exec, port-forward, re-adoption", async () => {
  const cluster = await useCluster();
  const ns = await cluster.newNamespace("process");
  const stateDir = await Deno.makeTempDir({ prefix: "vk-process-it-" });
  const kubectl = cluster.kubectlIn(ns);
  let vk: RunningVkubelet | undefined = await startVkubelet(cluster, {
    nodeName: NODE,
    provider: "process",
    providerConfig: JSON.stringify({ stateDir, cgroups: "off" }),
    logFile: Deno.env.get("VK_PROCESS_IT_LOG"),
  });
  const port = 18000 + Math.floor(Math.random() * 2000);
  try {
    // A Job printing hello world completes and `kubectl logs` shows it.
    await kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "batch/v1",
        kind: "Job",
        metadata: { name: "hello" },
        spec: {
          backoffLimit: 0,
          template: {
            spec: {
              ...toleration(),
              restartPolicy: "Never",
              containers: [{ name: "main", image: "busybox", command: ["echo", "hello world"] }],
            },
          },
        },
      }),
    );
    await kubectl(["wait", "--for=condition=complete", "job/hello", "--timeout=60s"]);
    assert.equal((await kubectl(["logs", "job/hello"])).trim(), "hello world");

    // A Deployment with a readiness probe and a ConfigMap at /etc/config.
    await kubectl(["create", "configmap", "settings", "--from-literal=key=value-from-configmap"]);
    await kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "web" },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: "web" } },
          template: {
            metadata: { labels: { app: "web" } },
            spec: {
              ...toleration(),
              containers: [{
                name: "web",
                image: "python:3",
                command: ["python3", "-m", "http.server", String(port), "--bind", "127.0.0.1"],
                readinessProbe: { httpGet: { path: "/", port }, periodSeconds: 1 },
                volumeMounts: [{ name: "config", mountPath: "/etc/config" }],
              }],
              volumes: [{ name: "config", configMap: { name: "settings" } }],
            },
          },
        },
      }),
    );
    await kubectl(["rollout", "status", "deployment/web", "--timeout=90s"]);
    const pod =
      (await kubectl(["get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}"]))
        .trim();
    const ready = await kubectl([
      "get",
      "pod",
      pod,
      "-o",
      'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
    ]);
    assert.equal(ready, "True");
    assert.equal(
      (await kubectl(["exec", pod, "--", "cat", "/etc/config/key"])).trim(),
      "value-from-configmap",
    );
    const token = await kubectl([
      "exec",
      pod,
      "--",
      "cat",
      "/var/run/secrets/kubernetes.io/serviceaccount/token",
    ]);
    assert.match(token, /^ey/);

    // kubectl port-forward fetches a page.
    const local = port + 2000;
    const forward = new Deno.Command(cluster.binary, {
      args: [
        "kubectl",
        `--kubeconfig=${cluster.kubeconfigPath}`,
        "-n",
        ns,
        "port-forward",
        `pod/${pod}`,
        `${local}:${port}`,
      ],
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    try {
      const page = await eventually("a page through port-forward", async () => {
        try {
          const res = await fetch(`http://127.0.0.1:${local}/`);
          return await res.text();
        } catch {
          return undefined;
        }
      }, 30_000);
      assert.match(page, /Directory listing/);
    } finally {
      forward.kill("SIGTERM");
      await Promise.all([forward.stdout.cancel(), forward.stderr.cancel(), forward.status]);
    }

    // kill -9 vkubelet: the process survives, and a new vkubelet re-adopts the same PID.
    const containerId = (await kubectl([
      "get",
      "pod",
      pod,
      "-o",
      "jsonpath={.status.containerStatuses[0].containerID}",
    ])).trim();
    const pid = Number(/process:\/\/(\d+)\./.exec(containerId)?.[1]);
    assert.ok(pid > 0, containerId);
    await vk.stop("SIGKILL");
    const previous = vk;
    vk = undefined;
    assert.ok(Deno.statSync(`/proc/${pid}`), "the container outlives vkubelet");
    vk = await startVkubelet(cluster, {
      nodeName: NODE,
      provider: "process",
      like: previous,
      logFile: Deno.env.get("VK_PROCESS_IT_LOG"),
    });
    await new Promise((r) => setTimeout(r, 2000));
    const after = JSON.parse(await kubectl(["get", "pod", pod, "-o", "json"]));
    assert.equal(after.status.containerStatuses[0].containerID, containerId);
    assert.equal(after.status.containerStatuses[0].restartCount, 0);
    const servers = [...Deno.readDirSync("/proc")].filter((e) => {
      try {
        return Deno.readTextFileSync(`/proc/${e.name}/cmdline`).split("\0")
          .join(" ").startsWith(`python3 -m http.server ${port}`);
      } catch {
        return false;
      }
    });
    assert.equal(servers.length, 1, "no duplicate after re-adoption");

    await reportFigures(kubectl, vk.pid);
  } finally {
    await cluster.kubectl(["delete", "namespace", ns, "--wait=true", "--timeout=60s"]);
    await vk?.stop("SIGTERM");
    await cluster.kubectl(["delete", "node", NODE]);
    await Deno.remove(stateDir, { recursive: true }).catch(() => {});
  }
});

/** Pod creation to Running for a trivial command (median of 5), and RSS per running pod. */
async function reportFigures(
  kubectl: (args: string[], stdin?: string) => Promise<string>,
  pid: number,
) {
  const pod = (name: string) =>
    JSON.stringify({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, labels: { figure: "yes" } },
      spec: {
        ...toleration(),
        automountServiceAccountToken: false,
        containers: [{ name: "c", image: "x", command: ["sleep", "600"] }],
      },
    });
  const latencies: number[] = [];
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    await kubectl(["apply", "-f", "-"], pod(`latency-${i}`));
    await kubectl([
      "wait",
      "--for=jsonpath={.status.phase}=Running",
      `pod/latency-${i}`,
      "--timeout=60s",
    ]);
    latencies.push(performance.now() - started);
  }
  latencies.sort((a, b) => a - b);
  const before = rssKiB(pid);
  const extra = 20;
  for (let i = 0; i < extra; i++) await kubectl(["apply", "-f", "-"], pod(`mem-${i}`));
  await kubectl([
    "wait",
    "--for=jsonpath={.status.phase}=Running",
    "pods",
    "-l",
    "figure=yes",
    "--timeout=120s",
  ]);
  await new Promise((r) => setTimeout(r, 2000));
  const after = rssKiB(pid);
  console.log(
    `process provider figures: creation to Running median ${latencies[2].toFixed(0)} ms ` +
      `(${
        latencies.map((l) => l.toFixed(0)).join(", ")
      }); vkubelet RSS ${before} KiB -> ${after} KiB ` +
      `with ${extra} more pods: ${((after - before) / extra).toFixed(0)} KiB per pod`,
  );
  await kubectl(["delete", "pods", "-l", "figure=yes", "--wait=false"]);
}
