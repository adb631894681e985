/**
 * The kubernetes provider's virtual node between the network lab (cluster A) and the second
 * cluster (B, tools/netlab/second_cluster.ts), for the tests across a non-flat boundary.
 *
 * vkubelet runs in the root namespace (it reaches both apiservers on 127.0.0.1) with
 * `--remote-pod-network` naming host 1's CNI network (`hostNetns`): its pods' A-side namespaces
 * hang on host 1's bridge with IPs from {@link VIRTUAL_POD_CIDR} (the upper half of host 1's /24,
 * so node 1's process pods never get the same IP), which flannel routes from host 2 and both
 * kube-proxies program. B's gateway pod reaches its kubelet API only through a relay on B's host
 * address (a Unix socket, not a route): `serverUrl` names that address, and the serving
 * certificate carries it. Without `gateway` the node is the provider as it is without the
 * feature: no `--remote-pod-network`, no `gateway` section.
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { VKUBELET_PERMISSIONS } from "../../../tools/cluster/vkubelet.ts";
import { freePort } from "../../../tools/cluster/ports.ts";
import { type Background, startBackground } from "../../../tools/netlab/background.ts";
import { run, waitUntil } from "../../../tools/netlab/command.ts";
import type { Netlab } from "../../../tools/netlab/lab.ts";
import type { SecondCluster } from "../../../tools/netlab/second_cluster.ts";
import { downstreamRbac } from "./_setup.ts";

const repoRoot = new URL("../../../", import.meta.url).pathname;

/** The virtual node's podCIDR: the upper half of host 1's. */
export const VIRTUAL_POD_CIDR = "198.19.1.128/25";

/** Options for {@link startVirtualNode}. */
export interface VirtualNodeOptions {
  nodeName: string;
  /** The gateway on (`--remote-pod-network` and `gateway:`) or off (neither). */
  gateway: boolean;
}

/** A running virtual node. */
export interface VirtualNode extends AsyncDisposable {
  name: string;
  process: Background;
  /** Its directory (provider config, remote-pod-network file, state, log). */
  dir: string;
  /** B's namespace of the gateway pod. */
  gatewayNamespace: string;
  /** The end of its log. */
  tail(lines?: number): Promise<string>;
}

/** RBAC for the provider's identity in B beyond `namespaces: same`'s: the gateway's objects. */
const GATEWAY_RULES = [
  {
    apiGroups: ["discovery.k8s.io"],
    resources: ["endpointslices"],
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
  },
  {
    apiGroups: [""],
    resources: ["serviceaccounts"],
    verbs: ["get", "create", "update", "patch", "delete"],
  },
  {
    apiGroups: ["apps"],
    resources: ["deployments"],
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
  },
];

/** Starts the virtual node in A forwarding to B's node; resolves once it is Ready. */
export async function startVirtualNode(
  lab: Netlab,
  b: SecondCluster,
  options: VirtualNodeOptions,
): Promise<VirtualNode> {
  const { nodeName } = options;
  const a = lab.cluster;
  // Short: the tunnel's Unix sockets are under it (`remote-pods/remote/<pod uid>/…`), and a
  // socket's path is at most 107 bytes.
  const dir = await Deno.makeTempDir({ prefix: "vkgw-" });
  const user = `vkubelet-forwarder-${nodeName}`;
  const gatewayNamespace = `${nodeName}-gw`;
  const rbac = downstreamRbac(user, "", true, GATEWAY_RULES);
  const applied = await b.cluster.kubectl(["apply", "-f", "-"], {
    stdin: JSON.stringify({ apiVersion: "v1", kind: "List", items: rbac }),
  });
  assert.equal(applied.code, 0, applied.stderr);
  const port = freePort();
  const serving = await a.issueServingCert(nodeName, [
    "127.0.0.1",
    b.host.underlayIp,
    nodeName,
  ]);
  const args: string[] = [];
  const providerConfig: Record<string, unknown> = {
    kubeconfig: await b.cluster.userKubeconfig(user),
    namespaces: "same",
    nodeSelector: { "kubernetes.io/hostname": b.node.name },
  };
  let process: Background | undefined;
  const stop = async () => {
    await a.kubectl([
      "delete",
      "pods",
      "-A",
      "--field-selector",
      `spec.nodeName=${nodeName}`,
      "--wait=true",
      "--timeout=60s",
    ]);
    await process?.stop(10_000);
    await a.kubectl(["delete", "node", nodeName, "--ignore-not-found", "--wait=false"]);
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    await b.cluster.kubectl([
      "delete",
      "namespace",
      gatewayNamespace,
      "--ignore-not-found",
      "--wait=false",
    ]);
    await b.cluster.kubectl([
      "delete",
      "clusterrole,clusterrolebinding",
      `${user}-capacity`,
      "--ignore-not-found",
    ]);
  };
  try {
    if (options.gateway) {
      const address = await b.relay(port, `127.0.0.1:${port}`);
      const file = join(dir, "remote-pod-network.json");
      const host = lab.nodes[0].host;
      await Deno.writeTextFile(
        file,
        JSON.stringify({
          cniConfDir: host.cniConfDir,
          cniBinDir: [await run(["bash", `${repoRoot}tools/network/build_cni.sh`])],
          clusterDomain: "cluster.local",
          clusterDNS: [host.addresses.dnsIp],
          podCIDR: VIRTUAL_POD_CIDR,
          hostNetns: `/run/netns/${host.netns}`,
          cniCacheDir: join(dir, "cni-cache"),
          stateDir: join(dir, "rp"),
          serverUrl: `https://${address}`,
          agentCommand: [
            "env",
            `DENO_DIR=${join(dir, "agent-deno-dir")}`,
            Deno.execPath(),
            "run",
            "--no-config",
            "-A",
            join(repoRoot, "app/agent/main.ts"),
          ],
        }),
      );
      args.push(`--remote-pod-network=${file}`);
      // B's gateway runs this checkout's agent through agentCommand: the image is B's business.
      providerConfig.gateway = { image: "vkubelet:netlab", namespace: gatewayNamespace };
    }
    const configFile = join(dir, "provider.json");
    await Deno.writeTextFile(configFile, JSON.stringify(providerConfig), { mode: 0o600 });
    process = await startBackground("vkubelet-kubernetes", [
      Deno.execPath(),
      "run",
      ...VKUBELET_PERMISSIONS,
      join(repoRoot, "main.ts"),
      `--nodename=${nodeName}`,
      "--provider=kubernetes",
      `--provider-config=${configFile}`,
      `--kubeconfig=${await a.nodeKubeconfig(nodeName)}`,
      "--node-ip=127.0.0.1",
      "--listen-address=127.0.0.1",
      `--port=${port}`,
      `--tls-cert-file=${serving.certFile}`,
      `--tls-private-key-file=${serving.keyFile}`,
      `--pod-log-dir=${join(dir, "pod-logs")}`,
      ...args,
    ], {
      env: { NO_COLOR: "1", STATE_DIRECTORY: join(dir, "state") },
      log: join(dir, "vkubelet.log"),
    });
    const running = process;
    await waitUntil(`virtual node ${nodeName} Ready`, async () => {
      if (running.exited()) throw new Error(`vkubelet exited:\n${await running.tail(40)}`);
      const res = await a.kubectl([
        "get",
        "node",
        nodeName,
        "-o",
        'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
      ]);
      return res.stdout.trim() === "True";
    }, { timeoutMs: 60_000, detail: () => running.tail(40) });
  } catch (err) {
    await stop();
    throw err;
  }
  const running = process;
  return {
    name: nodeName,
    process: running,
    dir,
    gatewayNamespace,
    tail: (lines = 30) => running.tail(lines),
    [Symbol.asyncDispose]: stop,
  };
}
