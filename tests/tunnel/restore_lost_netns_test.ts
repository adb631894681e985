/**
 * A remote pod whose network namespace was lost while vkubelet was down (a host reboot, removed
 * by hand) keeps its IP when vkubelet restores it: a new namespace, and CNI asked for the same
 * IP (host-local honours `CNI_ARGS` `IP=`), so the pod's reported `status.podIP` stays true. If
 * the IP was taken meanwhile, restoring fails naming the IP and leaves nothing set up. Real
 * network namespaces and the reference plugins in a test host (198.19.x.0/24). A remote pod
 * gets no resolv.conf or hosts file of the node (nothing of it runs there), nor a DNS warning.
 * Root only.
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { loadNetworkConfig } from "../../providers/process/network/cni.ts";
import { isNetns, removeNetns } from "../../providers/process/network/netns.ts";
import { PodNetworks } from "../../providers/process/network/pod_network.ts";
import { RemotePodNetworks } from "../../providers/process/network/tunnel_network.ts";
import { remotePod } from "../../tools/tunnel/server.ts";
import { log } from "../../tools/harness/kubelet_api_fakes.ts";
import { networkLab, networkSkipReason, tryRun } from "../providers/process/_network_lab.ts";

const skip = networkSkipReason();
if (skip) console.warn(`restore netns test skipped: ${skip}`);

type Lab = Awaited<ReturnType<typeof networkLab>>;

/** A vkubelet process's remote pod networks over the lab (a new one per "start"). */
async function remoteNetworks(lab: Lab, stateDir: string): Promise<RemotePodNetworks> {
  const list = await loadNetworkConfig(lab.network.cniConfDir);
  const networks = new PodNetworks({ ...lab.network, cniBinDir: [lab.network.cniBinDir] }, list!, {
    stateDir,
    log,
    nodeIPs: () => [lab.gateway],
  });
  networks.setPodCIDRs([lab.podCIDR]);
  return new RemotePodNetworks(networks, stateDir);
}

function podWithUid(name: string, port: number): Pod {
  const pod = remotePod(name, "team", [port]);
  return { ...pod, metadata: { ...pod.metadata, uid: crypto.randomUUID() } };
}

/**
 * One HTTP answer per connection relayed out of the pod's namespace, after the request has come
 * (a socket closed with the request unread is reset, and the answer may be lost with it).
 */
function answer(body: string) {
  return (
    conn: {
      readable: ReadableStream<Uint8Array>;
      writable: WritableStream<Uint8Array>;
      close(): void;
    },
  ) => {
    const text = `HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n`;
    const reader = conn.readable.getReader();
    const writer = conn.writable.getWriter();
    void reader.read()
      .then(() => writer.write(new TextEncoder().encode(text + body)))
      .then(() => writer.close())
      .then(async () => {
        while (!(await reader.read()).done) {
          /* the rest of the request, up to the client's close */
        }
      })
      .catch(() => {}).finally(() => conn.close());
  };
}

Deno.test({
  name: "a remote pod whose network namespace was lost while vkubelet was down gets its IP back",
  ignore: skip !== undefined,
  sanitizeResources: false,
  async fn() {
    const lab = await networkLab();
    const stateDir = await Deno.makeTempDir({ prefix: "vk-restore-state-" });
    const pod = podWithUid("job", 8080);
    let listener: { close(): Promise<void> } | undefined;
    const later = await remoteNetworks(lab, stateDir);
    try {
      const saved = await (await remoteNetworks(lab, stateDir)).setUp(pod);
      const ip = saved.ips[0];
      // vkubelet is down; the namespace goes (as at a reboot: its bind and its interfaces).
      await removeNetns(saved.netns);
      assert.ok(!isNetns(saved.netns));

      await later.restore(pod, saved);
      assert.ok(isNetns(saved.netns), "no namespace was made for the pod");
      const addr = await tryRun("nsenter", `--net=${saved.netns}`, "ip", "-o", "-4", "addr");
      assert.match(
        addr.stdout,
        new RegExp(`eth0\\s+inet ${ip.replaceAll(".", "\\.")}/`),
        [
          `the pod's IP ${ip} is not on eth0 of its new namespace:`,
          addr.stdout,
          addr.stderr,
        ].join("\n"),
      );
      // And the cluster side reaches the pod at that IP, through a relay in the namespace.
      listener = await later.listen(saved.netns, 8080, answer("hello at the same IP"));
      const got = await lab.inHost("curl", "-sS", "-m", "5", `http://${ip}:8080/`);
      assert.equal(got, "hello at the same IP");
    } finally {
      await listener?.close();
      await later.tearDown(pod).catch(() => {});
      await lab.close();
      await Deno.remove(stateDir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name:
    "a lost namespace whose IP was taken meanwhile fails to restore, naming the IP, with nothing left set up",
  ignore: skip !== undefined,
  sanitizeResources: false,
  async fn() {
    const lab = await networkLab();
    const stateDir = await Deno.makeTempDir({ prefix: "vk-restore-state-" });
    const pod = podWithUid("job", 8080);
    const later = await remoteNetworks(lab, stateDir);
    try {
      const saved = await (await remoteNetworks(lab, stateDir)).setUp(pod);
      const ip = saved.ips[0];
      await removeNetns(saved.netns);
      // Another container holds the IP now (host-local's lease file: container ID, ifname).
      const lease = join(lab.ipamDir, ip);
      await Deno.writeTextFile(lease, `${"ab".repeat(32)}\r\neth0`);

      await assert.rejects(
        later.restore(pod, saved),
        new RegExp(`could not have its IP ${ip.replaceAll(".", "\\.")} again.*not available`),
        "restoring a pod whose IP is taken did not fail",
      );
      assert.ok(!isNetns(saved.netns), "the new namespace was left behind");
      assert.equal(await Deno.readTextFile(lease), `${"ab".repeat(32)}\r\neth0`, "lease changed");
      const leases = [...Deno.readDirSync(lab.ipamDir)].map((e) => e.name)
        .filter((n) => n.startsWith("198."));
      assert.deepEqual(leases, [ip], "the pod holds another IP now");
    } finally {
      await later.tearDown(pod).catch(() => {});
      await lab.close();
      await Deno.remove(stateDir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name: "a remote pod's network set-up says nothing of the node's DNS and writes no resolv.conf",
  ignore: skip !== undefined,
  sanitizeResources: false,
  async fn() {
    const lab = await networkLab();
    const stateDir = await Deno.makeTempDir({ prefix: "vk-remote-dns-" });
    const warnings: string[] = [];
    const list = await loadNetworkConfig(lab.network.cniConfDir);
    // No clusterDNS: a process pod with dnsPolicy ClusterFirst is warned about, as by the kubelet.
    const networks = new PodNetworks(
      { ...lab.network, clusterDNS: [], cniBinDir: [lab.network.cniBinDir] },
      list!,
      {
        stateDir,
        log: {
          ...log,
          warn: (m: string, p?: unknown) => warnings.push(`${m} ${JSON.stringify(p)}`),
        },
        nodeIPs: () => [lab.gateway],
      },
    );
    networks.setPodCIDRs([lab.podCIDR]);
    const remote = new RemotePodNetworks(networks, stateDir);
    const pod = podWithUid("quiet", 8080);
    try {
      const { ips } = await remote.setUp(pod);
      assert.equal(ips.length, 1);
      assert.deepEqual(warnings, []);
      const dir = join(stateDir, "remote", pod.metadata!.uid!);
      await assert.rejects(Deno.stat(join(dir, "resolv.conf")), Deno.errors.NotFound);
    } finally {
      await remote.tearDown(pod);
      await lab.close();
      await Deno.remove(stateDir, { recursive: true }).catch(() => {});
    }
  },
});
