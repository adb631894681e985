/**
 * Kubelet paths through the apiserver's node proxy (`kubectl get --raw
 * /api/v1/nodes/N/proxy/...`), as client-go users reach them. The apiserver refuses to proxy to a
 * loopback node address, so the test gives the node a test address: it creates a network
 * namespace holding one end of a veth pair, addresses the host end in 198.18.0.0/15 (a range
 * reserved for tests), runs vkubelet's listener on that address, and removes everything
 * afterwards. Nothing else is dialled. Needs root and `ip`; skipped otherwise.
 * @module
 */
import assert from "node:assert/strict";
import type { PodList } from "kubernetes-types/core/v1.d.ts";
import { useCluster } from "../../../tools/cluster/harness.ts";
import { startVkubelet } from "../../../tools/cluster/vkubelet.ts";

async function run(cmd: string, args: string[]) {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

async function whyNot(): Promise<string | undefined> {
  if (Deno.build.os !== "linux") return "network namespaces need Linux";
  if (Deno.uid() !== 0) return "creating a network namespace needs root";
  try {
    if ((await run("ip", ["-V"])).code !== 0) return "`ip` (iproute2) does not run";
  } catch {
    return "`ip` (iproute2) is not installed";
  }
  return undefined;
}

/** A netns with a veth pair; the host end has `address`. `remove()` deletes both. */
async function testHost() {
  const id = crypto.randomUUID().slice(0, 6);
  const [ns, hostEnd, nsEnd] = [`vkt-${id}`, `vkh${id}`, `vkn${id}`];
  // A /30 in 198.18.0.0/15 picked at random, so parallel runs do not collide.
  const n = Math.floor(Math.random() * 2 ** 15) * 4;
  const octets = (x: number) => `198.${18 + (x >> 16)}.${(x >> 8) & 255}.${x & 255}`;
  const address = octets(n + 1);
  const steps: [string, string[]][] = [
    ["ip", ["netns", "add", ns]],
    ["ip", ["link", "add", hostEnd, "type", "veth", "peer", "name", nsEnd]],
    ["ip", ["link", "set", nsEnd, "netns", ns]],
    ["ip", ["addr", "add", `${address}/30`, "dev", hostEnd]],
    ["ip", ["link", "set", hostEnd, "up"]],
    ["ip", ["-n", ns, "addr", "add", `${octets(n + 2)}/30`, "dev", nsEnd]],
    ["ip", ["-n", ns, "link", "set", nsEnd, "up"]],
  ];
  const remove = async () => {
    await run("ip", ["link", "del", hostEnd]).catch(() => {});
    await run("ip", ["netns", "del", ns]).catch(() => {});
  };
  try {
    for (const [cmd, args] of steps) {
      const out = await run(cmd, args);
      if (out.code !== 0) throw new Error(`${cmd} ${args.join(" ")}: ${out.stderr}`);
    }
    // The host end carries the address once both ends are up.
    const deadline = Date.now() + 5_000;
    while (!(await run("ip", ["-o", "addr", "show", "dev", hostEnd])).stdout.includes(address)) {
      if (Date.now() > deadline) throw new Error(`${hostEnd} did not get ${address}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } catch (err) {
    await remove();
    throw err;
  }
  return { address, remove };
}

const skip = await whyNot();
if (skip) console.warn(`skipping the node proxy paths test: ${skip}`);

Deno.test({
  name:
    "node proxy: /runningpods without a slash is redirected and answered, as the kubelet's mux does",
  ignore: skip !== undefined,
  async fn(t) {
    const cluster = await useCluster();
    const nodeName = `vk-proxy-${crypto.randomUUID().slice(0, 6)}`;
    const ns = await cluster.newNamespace("node-proxy");
    const host = await testHost();
    try {
      const vk = await startVkubelet(cluster, {
        nodeName,
        args: [`--node-ip=${host.address}`, `--listen-address=${host.address}`],
      });
      try {
        const kubectl = cluster.kubectlIn(ns);
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
        ]);
        await kubectl(["wait", "--for=condition=Ready", "pod/web", "--timeout=60s"]);
        const proxy = `/api/v1/nodes/${nodeName}/proxy`;
        const raw = async (path: string, verbose = false) => {
          const out = await cluster.kubectl([
            "get",
            "--raw",
            `${proxy}${path}`,
            ...verbose ? ["-v=6"] : [],
          ]);
          assert.equal(out.code, 0, `${path}: ${out.stderr}`);
          return out;
        };
        const names = (out: { stdout: string }) =>
          (JSON.parse(out.stdout) as PodList).items.map((p) =>
            `${p.metadata?.namespace}/${p.metadata?.name}`
          );

        await t.step("/runningpods: 301 to /runningpods/, which lists the pod", async () => {
          const out = await raw("/runningpods", true);
          assert.match(
            out.stderr,
            /url="[^"]+\/proxy\/runningpods" status="301 Moved Permanently"/,
          );
          assert.deepEqual(names(out), [`${ns}/web`]);
        });
        await t.step("/runningpods/ and /pods/ serve as /pods does", async () => {
          assert.deepEqual(names(await raw("/runningpods/")), [`${ns}/web`]);
          assert.deepEqual(names(await raw("/pods/")), [`${ns}/web`]);
          assert.deepEqual(names(await raw("/pods")), [`${ns}/web`]);
        });
        await t.step("/healthz answers ok; /stats is redirected to /stats/", async () => {
          assert.equal((await raw("/healthz")).stdout, "ok");
          const stats = await cluster.kubectl(["get", "--raw", `${proxy}/stats`, "-v=6"]);
          assert.match(stats.stderr, /url="[^"]+\/proxy\/stats" status="301 Moved Permanently"/);
        });
      } finally {
        await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
        const { code } = await vk.stop("SIGTERM");
        assert.equal(code, 0, vk.output());
        await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
      }
    } finally {
      await host.remove();
    }
  },
});
