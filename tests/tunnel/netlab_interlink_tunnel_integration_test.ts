/**
 * An interLink job on the cluster's pod network through the tunnel (issue #64), against the real
 * network lab (tools/netlab): kube-proxy (nftables on host 1, iptables on host 2), CoreDNS, flannel
 * between two vkubelet hosts, and a third node, vkubelet `--provider=interlink
 * --remote-pod-network`, whose pods take IPs on host 2's CNI bridge (tools/netlab/remote_node.ts)
 * while they run through interLink's real API server and its SLURM plugin on Debian's SLURM (the
 * containers through the singularity stand-in), the agent started by the wrapped main container. A
 * process pod on host 1 calls the job's ClusterIP Service by its DNS name and hears the job; the job
 * calls a Service whose endpoint is that process pod, by name (the agent's hosts file bound over
 * /etc/hosts by the job itself: the plugin binds none) and by its env var, and the backend sees the
 * job's pod IP as the source. The same with the tunnel off (an interlink node without
 * `--remote-pod-network`): every call fails (./_netlab_tunnel.ts). Root only; skipped without the
 * plugin; run it under `flock -o /tmp/vk-netlab.lock` (one lab per machine).
 * @module
 */
import { netlabSkipReason, startNetlab } from "../../tools/netlab/lab.ts";
import { startRemoteNode } from "../../tools/netlab/remote_node.ts";
import { startSlurm } from "../../tools/harness/slurm.ts";
import { startInterlinkServer } from "../../tools/harness/interlink/interlink.ts";
import { ensureSlurmPlugin, startSlurmPlugin } from "../../tools/harness/interlink_slurm/plugin.ts";
import { checkRemoteJobs } from "./_netlab_tunnel.ts";

const skip = netlabSkipReason();
const plugin = skip ? { missing: skip } : await ensureSlurmPlugin();
if ("missing" in plugin) console.warn(`netlab interlink tunnel test skipped: ${plugin.missing}`);

Deno.test({
  name:
    "an interLink job behind a ClusterIP Service answers a pod on another host by DNS name, and calls a Service by name from its pod IP, only through the tunnel",
  ignore: "missing" in plugin,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async (t) => {
    if (!("path" in plugin)) return;
    await using lab = await startNetlab();
    const slurm = await startSlurm({ cpus: 2, memoryMiB: 2000 });
    await using _slurm = { [Symbol.asyncDispose]: () => slurm.stop() };
    await using il = await startSlurmPlugin(plugin.path, slurm);
    await using server = await startInterlinkServer({ pluginUrl: il.url });
    // The jobs run as root, in a mount namespace of their own: this Deno and checkout they see.
    const agentMain = new URL("../../app/agent/main.ts", import.meta.url).pathname;
    const interlinkNode = (name: string, tunnel: boolean) =>
      startRemoteNode(lab, {
        nodeName: `${lab.nodes[0].name.slice(0, -3)}-${name}`,
        provider: "interlink",
        providerConfig: JSON.stringify({
          target: "interlink",
          url: server.url,
          statusInterval: "500ms",
        }),
        tunnel,
        agentCommand: [Deno.execPath(), "run", "--no-config", "-A", agentMain],
      });
    await using on = await interlinkNode("il-on", true);
    await using off = await interlinkNode("il-off", false);
    const outDir = await Deno.makeTempDir({ prefix: "vk-il-out-" });
    await using _out = {
      [Symbol.asyncDispose]: () => Deno.remove(outDir, { recursive: true }).catch(() => {}),
    };
    const text = (path: string) => Deno.readTextFile(path).catch(() => "");
    await checkRemoteJobs(t, {
      lab,
      on,
      off,
      // Where the wrapper has the agent write it (providers/interlink/request/tunnel_agent.ts).
      hostsFile: "${TMPDIR:-/tmp}/vk-tunnel-$VK_POD_UID/hosts",
      outDir,
      async diagnose(ns, name) {
        const uid = (await lab.cluster.kubectl([
          "-n",
          ns,
          "get",
          "pod",
          name,
          "-o",
          "jsonpath={.metadata.uid}",
        ])).stdout.trim();
        const dir = `${il.dataRoot}${ns}-${uid}`;
        return `agent: ${await text(`/tmp/vk-tunnel-${uid}/agent.log`)}\njob: ${await text(
          `${dir}/job.out`,
        )}${await text(`${dir}/run-main.out`)}`;
      },
    });
  },
});
