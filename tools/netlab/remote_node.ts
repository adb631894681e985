/**
 * A vkubelet node whose pods run elsewhere (slurm, interlink) joined to the lab's pod network
 * through the tunnel: vkubelet in the root namespace (where SLURM's daemons and its jobs are, and
 * where the jobs' agents dial its kubelet API on 127.0.0.1), with `--remote-pod-network` naming
 * host 2's CNI network (`hostNetns`: the plugins run in host 2). So its pods' namespaces hang on
 * host 2's bridge and take IPs from host 2's podCIDR and host-local leases (shared with node 2,
 * so the two never hand out one IP twice; a range of its own would need a gateway of its own on
 * the one bridge, which the bridge plugin refuses), which flannel already routes from host 1 and
 * both kube-proxies program. Without `tunnel` it is the same node with the tunnel off.
 *
 * ```ts
 * await using remote = await startRemoteNode(lab, { nodeName, provider: "slurm", ... });
 * ```
 * @module
 */
import { join } from "node:path";
import { type RunningVkubelet, startVkubelet } from "../cluster/vkubelet.ts";
import { NOBODY } from "../harness/slurm.ts";
import type { Netlab } from "./lab.ts";

/** Options for {@link startRemoteNode}. */
export interface RemoteNodeOptions {
  nodeName: string;
  provider: "slurm" | "interlink";
  /** The provider config (JSON or YAML). */
  providerConfig: string;
  /** vkubelet's environment (e.g. `SLURM_CONF`). */
  env?: Record<string, string>;
  /** Join the pod network through the tunnel (`--remote-pod-network`); default true. */
  tunnel?: boolean;
  /**
   * The agent's program (`agentCommand`); default a copy of Deno that nobody may run, in the
   * node's directory (a job that sees another /tmp needs a path it sees).
   */
  agentCommand?: string[];
}

/** A running remote node. */
export interface RemoteNode extends AsyncDisposable {
  name: string;
  vkubelet: RunningVkubelet;
  /** Its own directory (the remote-pod-network file, the agents' Deno, state). */
  dir: string;
}

/**
 * The agent as a job of nobody runs it: a copy of Deno and a `DENO_DIR` nobody can use, and this
 * checkout's agent entry (readable by all).
 */
async function agentCommand(dir: string): Promise<string[]> {
  const deno = join(dir, "deno");
  await Deno.copyFile(Deno.execPath(), deno);
  await Deno.chmod(deno, 0o755);
  const denoDir = join(dir, "deno-dir");
  await Deno.mkdir(denoDir);
  await Deno.chown(denoDir, NOBODY.uid, NOBODY.gid);
  const agentMain = new URL("../../app/agent/main.ts", import.meta.url).pathname;
  return ["env", `DENO_DIR=${denoDir}`, deno, "run", "--no-config", "-A", agentMain];
}

/** Starts the remote node and resolves once it is Ready; see the module doc. */
export async function startRemoteNode(
  lab: Netlab,
  options: RemoteNodeOptions,
): Promise<RemoteNode> {
  const host = lab.nodes[1].host;
  // Short: the tunnel's Unix sockets are `<stateDir>/remote/<netns>-<port>.sock` (108 bytes).
  const dir = await Deno.makeTempDir({ prefix: "vkr-" });
  await Deno.chmod(dir, 0o755);
  const args: string[] = [];
  if (options.tunnel ?? true) {
    const file = join(dir, "remote-pod-network.json");
    await Deno.writeTextFile(
      file,
      JSON.stringify({
        cniConfDir: host.cniConfDir,
        cniBinDir: [lab.cniBinDir],
        clusterDomain: "cluster.local",
        podCIDR: host.podCidr,
        hostNetns: `/run/netns/${host.netns}`,
        cniCacheDir: join(dir, "cni-cache"),
        stateDir: join(dir, "s"),
        agentCommand: options.agentCommand ?? await agentCommand(dir),
      }),
    );
    args.push(`--remote-pod-network=${file}`);
  }
  const vkubelet = await startVkubelet(lab.cluster, {
    nodeName: options.nodeName,
    provider: options.provider,
    providerConfig: options.providerConfig,
    env: options.env,
    args,
    logFile: join(dir, "vkubelet.log"),
  });
  return {
    name: options.nodeName,
    vkubelet,
    dir,
    async [Symbol.asyncDispose]() {
      // Its pods first, while it runs: each is detached (CNI DEL, relays stopped) on deletion.
      await lab.cluster.kubectl([
        "delete",
        "pods",
        "-A",
        "--field-selector",
        `spec.nodeName=${options.nodeName}`,
        "--wait=true",
        "--timeout=60s",
      ]);
      await vkubelet.stop();
      await lab.cluster.kubectl([
        "delete",
        "node",
        options.nodeName,
        "--ignore-not-found",
        "--wait=false",
      ]);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}
