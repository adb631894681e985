/**
 * A SLURM job on the cluster's pod network through the tunnel (issue #64), against the real
 * network lab (tools/netlab): kube-proxy (nftables on host 1, iptables on host 2), CoreDNS, flannel
 * between two vkubelet hosts, and a third node, vkubelet `--provider=slurm --remote-pod-network`,
 * whose pods take IPs on host 2's CNI bridge (tools/netlab/remote_node.ts) while their jobs run
 * under Debian's slurmd as nobody. A process pod on host 1 calls the job's ClusterIP Service by its
 * DNS name and hears the job; the job calls a Service whose endpoint is that process pod, by name
 * (the agent's hosts file as its /etc/hosts) and by its env var, and the backend sees the job's pod
 * IP as the source. The same with the tunnel off (a slurm node without `--remote-pod-network`):
 * every call fails (./_netlab_tunnel.ts). Root only; run it under `flock -o /tmp/vk-netlab.lock`
 * (one lab per machine).
 * @module
 */
import { join } from "node:path";
import { netlabSkipReason, startNetlab } from "../../tools/netlab/lab.ts";
import { startRemoteNode } from "../../tools/netlab/remote_node.ts";
import { NOBODY, startSlurm } from "../../tools/harness/slurm.ts";
import { checkRemoteJobs } from "./_netlab_tunnel.ts";

const skip = netlabSkipReason();
if (skip) console.warn(`netlab slurm tunnel test skipped: ${skip}`);

Deno.test({
  name:
    "a SLURM job behind a ClusterIP Service answers a pod on another host by DNS name, and calls a Service by name from its pod IP, only through the tunnel",
  ignore: skip !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async (t) => {
    await using lab = await startNetlab();
    const slurm = await startSlurm();
    await using _slurm = { [Symbol.asyncDispose]: () => slurm.stop() };
    const slurmNode = (name: string, tunnel: boolean) =>
      startRemoteNode(lab, {
        nodeName: `${lab.nodes[0].name.slice(0, -3)}-${name}`,
        provider: "slurm",
        providerConfig: JSON.stringify({
          cli: {},
          sharedDir: slurm.sharedDir,
          stateDir: join(slurm.dir, `vk-state-${name}`),
          fileOwner: NOBODY,
          statusInterval: "500ms",
        }),
        env: slurm.env,
        tunnel,
      });
    await using on = await slurmNode("slurm-on", true);
    await using off = await slurmNode("slurm-off", false);
    // The jobs run as nobody: their outputs under a directory it can reach.
    const outDir = join(slurm.dir, "out");
    await Deno.mkdir(outDir, { mode: 0o755 });
    const podDir = async (ns: string, name: string) => {
      const uid = (await lab.cluster.kubectl([
        "-n",
        ns,
        "get",
        "pod",
        name,
        "-o",
        "jsonpath={.metadata.uid}",
      ])).stdout.trim();
      return `${slurm.sharedDir}/${ns}_${name}_${uid}`;
    };
    const text = (path: string) => Deno.readTextFile(path).catch(() => "");
    await checkRemoteJobs(t, {
      lab,
      on,
      off,
      // The pod directory's state/ (the job's home is its sibling).
      hostsFile: "$HOME/../state/tunnel.hosts",
      outDir,
      async diagnose(ns, name) {
        const dir = await podDir(ns, name);
        return `agent: ${await text(`${dir}/state/tunnel.log`)}\njob: ${await text(
          `${dir}/state/job.out`,
        )}${await text(`${dir}/logs/main.0.log`)}`;
      },
    });
  },
});
