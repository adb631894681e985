/**
 * The interlink provider's pods on the pod network through the tunnel (issue #64 item 5), with no
 * change to the plugin: vkubelet's interlink provider → interLink's API server → its real SLURM
 * plugin → Debian's SLURM, containers through the singularity stand-in; the node's tunnel as
 * start-up wires it, handed to the provider as `podNetwork`; a test host (198.19.x.0/24) whose CNI
 * bridge gives the pod its IP, and a ClusterIP Service there (an nft DNAT for kube-proxy's rule)
 * whose backend answers with the caller's address. The main container's command, wrapped with the
 * agent, serves HTTP on 127.0.0.1 and calls the Service by the env var the kubelet would give it.
 * With the tunnel, a client in the test host reaches it at its pod IP and the call reaches the
 * backend from the pod IP; on a node without the tunnel, the pod has no IP there and the call
 * fails. Root only; skipped without the plugin. The same through the real kube-proxy and CoreDNS,
 * from a pod on another vkubelet host: tests/tunnel/netlab_interlink_tunnel_integration_test.ts.
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { getLogger } from "../../../base/log.ts";
import type { Provider, ProviderDeps } from "../../../provider/mod.ts";
import { createProvider } from "../../../providers/interlink/mod.ts";
import { loadNetworkConfig } from "../../../providers/process/network/cni.ts";
import { PodNetworks } from "../../../providers/process/network/pod_network.ts";
import { RemotePodNetworks } from "../../../providers/process/network/tunnel_network.ts";
import { startInterlinkServer } from "../../../tools/harness/interlink/interlink.ts";
import {
  ensureSlurmPlugin,
  startSlurmPlugin,
} from "../../../tools/harness/interlink_slurm/plugin.ts";
import { startSlurm } from "../../../tools/harness/slurm.ts";
import { eventually } from "../../../tools/harness/wait.ts";
import { ListedServices, startTunnelNode } from "../../../tools/tunnel/server.ts";
import { freePort } from "../../../app/run/parts.ts";
import { networkLab, networkSkipReason, tryRun } from "../process/_network_lab.ts";
import { serviceBackend } from "../../tunnel/_service_backend.ts";

const skip = networkSkipReason();
const plugin = skip ? { missing: skip } : await ensureSlurmPlugin();
if ("missing" in plugin) console.warn(`interlink tunnel test skipped: ${plugin.missing}`);

const CLUSTER_IP = "198.18.96.79";

/** The container: an HTTP answer on 127.0.0.1:`port`, the Service by its env var, into $OUT. */
function jobCommand(port: number): string {
  const answer = "HTTP/1.1 200 OK\\r\\nContent-Length: 18\\r\\nConnection: close\\r\\n\\r\\n" +
    "hello from the job";
  return [
    `printf '${answer}' > "$OUT/answer"`,
    `socat TCP-LISTEN:${port},bind=127.0.0.1,fork,reuseaddr SYSTEM:"cat $OUT/answer" &`,
    'curl -sS -m 5 "http://$WEB_SERVICE_HOST:$WEB_SERVICE_PORT/" > "$OUT/by-env.txt" 2>&1',
    'echo "$WEB_SERVICE_HOST" > "$OUT/done"',
    "sleep 120",
  ].join("\n");
}

Deno.test({
  name:
    "through interLink's SLURM plugin, a pod is reached at its pod IP and calls a Service by env var, only through the tunnel",
  ignore: "missing" in plugin,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    if (!("path" in plugin)) return;
    const lab = await networkLab();
    const slurm = await startSlurm({ cpus: 2, memoryMiB: 2000 });
    const stateDir = await Deno.makeTempDir({ prefix: "vk-il-tunnel-" });
    await Deno.chmod(stateDir, 0o755);
    const backend = serviceBackend(lab, "0.0.0.0");
    const stop = new AbortController();
    const providers: Provider[] = [];
    try {
      await backend.route([{ ip: CLUSTER_IP, port: 8080 }], stateDir);
      const networks = new PodNetworks(
        { ...lab.network, cniBinDir: [lab.network.cniBinDir] },
        (await loadNetworkConfig(lab.network.cniConfDir))!,
        { stateDir, log: getLogger(["vkubelet", "test"]), nodeIPs: () => [lab.gateway] },
      );
      networks.setPodCIDRs([lab.podCIDR]);
      const services = new ListedServices();
      services.set([{
        namespace: "default",
        name: "web",
        clusterIP: CLUSTER_IP,
        ports: [{ port: 8080, protocol: "TCP" }],
      }]);
      const agentMain = new URL("../../../app/agent/main.ts", import.meta.url).pathname;
      await using node = await startTunnelNode(
        new RemotePodNetworks(networks, stateDir),
        services,
        [Deno.execPath(), "run", "--no-config", "-A", agentMain],
      );
      await using il = await startSlurmPlugin(plugin.path, slurm);
      await using server = await startInterlinkServer({ pluginUrl: il.url });
      const provider = (name: string, podNetwork?: ProviderDeps["podNetwork"]) => {
        const made = createProvider({
          target: "interlink",
          url: server.url,
          statusInterval: "500ms",
        }, {
          nodeName: name,
          log: getLogger(["vkubelet", "provider", "test"]),
          clock: realClock,
          internalIp: "127.0.0.1",
          daemonPort: 10250,
          signal: stop.signal,
          podNetwork,
        });
        providers.push(made);
        return made;
      };
      const port = freePort("127.0.0.1");
      const pod = async (name: string): Promise<{ pod: Pod; out: string }> => {
        const out = join(stateDir, name);
        await Deno.mkdir(out, { mode: 0o777 });
        await Deno.chmod(out, 0o777);
        return {
          out,
          pod: {
            apiVersion: "v1",
            kind: "Pod",
            metadata: { namespace: "default", name, uid: crypto.randomUUID() },
            spec: {
              restartPolicy: "Never",
              terminationGracePeriodSeconds: 1,
              containers: [{
                name: "main",
                image: "busybox:1.36",
                command: ["/bin/sh", "-c", jobCommand(port)],
                ports: [{ containerPort: port }],
                env: [
                  { name: "OUT", value: out },
                  // As the kubelet's service links give them: the ClusterIP.
                  { name: "WEB_SERVICE_HOST", value: CLUSTER_IP },
                  { name: "WEB_SERVICE_PORT", value: "8080" },
                ],
              }],
            },
          },
        };
      };
      const read = (out: string, file: string) =>
        Deno.readTextFile(join(out, file)).then((t) => t.trim(), () => "");
      const fromHost = (url: string) =>
        tryRun("ip", "netns", "exec", lab.name, "curl", "-sS", "-m", "5", url);

      // The tunnel on.
      const on = provider("vk-il-tunnel-on", node.tunnel);
      const job = await pod("job");
      await on.createPod(job.pod, {});
      const podIP = (await on.getPod("default", "job", {}))?.status?.podIP ?? "";
      assert.ok(
        podIP.startsWith(lab.podCIDR.slice(0, -5)),
        `pod IP ${podIP} not in ${lab.podCIDR}`,
      );
      const jobDir = `${il.dataRoot}default-${job.pod.metadata!.uid}`;
      const why = async () =>
        `job: ${await read(jobDir, "run-main.out")} ${await read(jobDir, "job.out")}`;
      await eventually(
        "the job to make its call",
        async () => (await read(job.out, "done")) || false,
        120_000,
      )
        .catch(async (err) => {
          throw new Error(`${err.message}; ${await why()}`);
        });
      assert.match(await read(job.out, "done"), /^127\.\d+\.\d+\.\d+$/, await why());
      assert.equal(await read(job.out, "by-env.txt"), `backend saw ${podIP}`);
      const inbound = await eventually("the job at its pod IP", async () => {
        const r = await fromHost(`http://${podIP}:${port}/`);
        return r.code === 0 && r.stdout;
      }, 20_000);
      assert.equal(inbound, "hello from the job");
      await on.deletePod(job.pod, {});
      await eventually("the pod to be gone", async () => !await on.getPod("default", "job", {}));
      const after = await fromHost(`http://${podIP}:${port}/`);
      assert.notEqual(after.stdout, "hello from the job", "the pod IP answered after deletion");

      // The tunnel off: a node without podNetwork.
      const off = provider("vk-il-tunnel-off");
      const plain = await pod("plain");
      await off.createPod(plain.pod, {});
      await eventually(
        "the plain job's call",
        async () => (await read(plain.out, "done")) || false,
        120_000,
      );
      const plainIP = (await off.getPod("default", "plain", {}))?.status?.podIP ?? "";
      assert.ok(!plainIP.startsWith(lab.podCIDR.slice(0, -5)), `${plainIP} is on the test host`);
      assert.equal(await read(plain.out, "done"), CLUSTER_IP);
      assert.doesNotMatch(await read(plain.out, "by-env.txt"), /backend saw/);
      await off.deletePod(plain.pod, {});
      await eventually(
        "the plain pod to be gone",
        async () => !await off.getPod("default", "plain", {}),
      );
    } finally {
      stop.abort();
      await Promise.all(providers.map((p) => p.close?.()));
      await backend.stop();
      await slurm.stop();
      await lab.close();
      await Deno.remove(stateDir, { recursive: true }).catch(() => {});
    }
  },
});
