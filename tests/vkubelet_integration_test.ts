import assert from "node:assert/strict";
import { useCluster } from "../tools/cluster/harness.ts";
import { nodeReady, startVkubelet, VKUBELET_PERMISSIONS } from "../tools/cluster/vkubelet.ts";
import { eventually } from "../tools/harness/wait.ts";

const mainPath = new URL("../main.ts", import.meta.url).pathname;
const unique = (prefix: string) => `${prefix}-${crypto.randomUUID().slice(0, 6)}`;

async function nodeUid(cluster: Awaited<ReturnType<typeof useCluster>>, name: string) {
  const res = await cluster.kubectl(["get", "node", name, "-o", "jsonpath={.metadata.uid}"]);
  return res.code === 0 ? res.stdout : undefined;
}

Deno.test("vkubelet's node is Ready within 5 s and SIGTERM stops it with exit 0", async () => {
  const cluster = await useCluster();
  const nodeName = unique("vk-start");
  const started = performance.now();
  const vk = await startVkubelet(cluster, { nodeName });
  const readyMs = performance.now() - started;
  try {
    assert.ok(readyMs < 5_000, `Ready after ${readyMs} ms`);
    const node = JSON.parse(
      (await cluster.kubectl(["get", "node", nodeName, "-o", "json"])).stdout,
    );
    assert.equal(node.status.daemonEndpoints.kubeletEndpoint.Port, vk.port);
    assert.deepEqual(node.status.addresses.find((a: { type: string }) => a.type === "InternalIP"), {
      type: "InternalIP",
      address: "127.0.0.1",
    });
    assert.equal(node.metadata.labels.type, "virtual-kubelet");
    assert.ok(
      node.spec.taints.some((t: { key: string }) => t.key === "virtual-kubelet.io/provider"),
    );
  } finally {
    const { code, ms } = await vk.stop("SIGTERM");
    assert.equal(code, 0, vk.output());
    assert.ok(ms < 5_000, `stopped after ${ms} ms`);
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
  }
});

Deno.test("bad configuration exits 2 with every problem and creates no Node", async () => {
  const cluster = await useCluster();
  const nodeName = unique("vk-bad");
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/mock.yaml`, "capacity: {cpu: 10x}\n");
    const cases: [string[], RegExp[]][] = [
      [["--provider=nope"], [/--provider/, /mock/]],
      [[`--provider-config=${dir}/mock.yaml`], [
        /capacity\.cpu: "10x" is not a Kubernetes quantity/,
      ]],
      [["--kubeconfig=/nonexistent/kubeconfig"], [/\/nonexistent\/kubeconfig/]],
      [
        ["--node-lease-duration-seconds=10", "--node-lease-renew-interval=10s"],
        [/--node-lease-renew-interval/],
      ],
    ];
    for (const [args, expected] of cases) {
      const kubeconfig = await cluster.nodeKubeconfig(nodeName);
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          ...VKUBELET_PERMISSIONS,
          mainPath,
          `--nodename=${nodeName}`,
          `--kubeconfig=${kubeconfig}`,
          "--provider=mock",
          "--node-ip=127.0.0.1",
          "--listen-address=127.0.0.1",
          "--tls-self-signed",
          ...args,
        ],
        env: { NO_COLOR: "1" },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stderr = new TextDecoder().decode(out.stderr);
      assert.equal(out.code, 2, `${args.join(" ")}: ${stderr}`);
      for (const pattern of expected) assert.match(stderr, pattern, args.join(" "));
    }
    assert.equal(await nodeUid(cluster, nodeName), undefined, "no Node was created");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("after kill -9 a restarted vkubelet makes the same node Ready again", async () => {
  const cluster = await useCluster();
  const nodeName = unique("vk-kill");
  const first = await startVkubelet(cluster, { nodeName });
  const uid = await nodeUid(cluster, nodeName);
  await first.stop("SIGKILL");
  const second = await startVkubelet(cluster, { nodeName, like: first });
  try {
    assert.equal(await nodeReady(cluster, nodeName), "True");
    assert.equal(await nodeUid(cluster, nodeName), uid);
  } finally {
    assert.equal((await second.stop()).code, 0, second.output());
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
  }
});

Deno.test("20 replicas run, survive a kill -9 mid-rollout, and scale to zero", async () => {
  const cluster = await useCluster();
  const nodeName = unique("vk-deploy");
  const ns = await cluster.newNamespace("deploy");
  let vk = await startVkubelet(cluster, { nodeName });
  try {
    const manifest = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web", namespace: ns },
      spec: {
        replicas: 20,
        selector: { matchLabels: { app: "web" } },
        strategy: { rollingUpdate: { maxSurge: "100%", maxUnavailable: "50%" } },
        template: {
          metadata: { labels: { app: "web" } },
          spec: {
            nodeSelector: { "kubernetes.io/hostname": nodeName },
            tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
            containers: [{ name: "web", image: "nginx:1" }],
          },
        },
      },
    };
    const apply = (m: unknown) =>
      cluster.kubectl(["apply", "-f", "-"], { stdin: JSON.stringify(m) });
    assert.equal((await apply(manifest)).code, 0);
    const running = async (image: string) => {
      const res = await cluster.kubectl(["-n", ns, "get", "pods", "-o", "json"]);
      const pods = JSON.parse(res.stdout).items as {
        metadata: { deletionTimestamp?: string };
        spec: { containers: { image: string }[] };
        status: { phase: string };
      }[];
      const ok = pods.filter((p) =>
        p.status.phase === "Running" && p.spec.containers[0].image === image &&
        !p.metadata.deletionTimestamp
      );
      return ok.length === 20 && pods.length === 20 ? pods.length : undefined;
    };
    const t0 = performance.now();
    await eventually("20 Running pods", () => running("nginx:1"), 30_000);
    const firstRolloutMs = performance.now() - t0;
    // A rollout, with vkubelet killed in the middle of it.
    manifest.spec.template.spec.containers[0].image = "nginx:2";
    assert.equal((await apply(manifest)).code, 0);
    await new Promise((r) => setTimeout(r, 300));
    await vk.stop("SIGKILL");
    vk = await startVkubelet(cluster, { nodeName, like: vk });
    await eventually("20 Running pods of the new image", () => running("nginx:2"), 60_000);
    // Scale to zero: every pod goes, none is left Terminating.
    assert.equal(
      (await cluster.kubectl(["-n", ns, "scale", "deployment", "web", "--replicas=0"])).code,
      0,
    );
    await eventually("no pods", async () => {
      const res = await cluster.kubectl(["-n", ns, "get", "pods", "-o", "name"]);
      return res.stdout.trim() === "" ? true : undefined;
    }, 30_000);
    console.log(`20 replicas Running ${firstRolloutMs.toFixed(0)} ms after apply`);
  } finally {
    assert.equal((await vk.stop()).code, 0);
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
  }
});
