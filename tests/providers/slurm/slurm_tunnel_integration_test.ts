/**
 * The slurm provider's pods on the pod network through the tunnel (issue #64 items 1, 3 and 5),
 * with a real single-node SLURM (jobs as nobody, `runtime: none`) and real network namespaces: a
 * test host (198.19.x.0/24, from 198.18.0.0/15) whose CNI bridge gives the remote pod its IP; the
 * node's tunnel as start-up wires it (RemotePodTunnel on the kubelet API, handed to the provider
 * as `podNetwork`); a ClusterIP Service (an nft DNAT in the test host for kube-proxy's rule)
 * whose backend answers with the caller's address. The job serves HTTP on 127.0.0.1 and calls
 * the Service twice: by the env var the kubelet would give it (`WEB_SERVICE_HOST`, the ClusterIP
 * in the pod's spec), and by name, with the agent's hosts file as its /etc/hosts (an
 * unprivileged mount namespace, as apptainer binds it). With the tunnel: a client in the test
 * host reaches the job at its pod IP, and both calls reach the backend from the pod IP. With the
 * tunnel off (a node without `podNetwork`): the pod has no IP on the test host's network and
 * both calls fail; after the pod is deleted, its pod IP answers no more. Root only. The same
 * through the real kube-proxy and CoreDNS, from a pod on another vkubelet host:
 * tests/tunnel/netlab_slurm_tunnel_integration_test.ts.
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { getLogger } from "../../../base/log.ts";
import { createProvider } from "../../../providers/slurm/mod.ts";
import type { Provider, ProviderDeps } from "../../../provider/mod.ts";
import { loadNetworkConfig } from "../../../providers/process/network/cni.ts";
import { PodNetworks } from "../../../providers/process/network/pod_network.ts";
import { RemotePodNetworks } from "../../../providers/process/network/tunnel_network.ts";
import { NOBODY, startSlurm } from "../../../tools/harness/slurm.ts";
import { eventually } from "../../../tools/harness/wait.ts";
import { ListedServices, startTunnelNode } from "../../../tools/tunnel/server.ts";
import { freePort } from "../../../app/run/parts.ts";
import { networkLab, networkSkipReason, tryRun } from "../process/_network_lab.ts";
import { serviceBackend } from "../../tunnel/_service_backend.ts";

const skip = networkSkipReason();
if (skip) console.warn(`slurm tunnel test skipped: ${skip}`);

const CLUSTER_IP = "198.18.96.77";
/** A Service on port 80, which an unprivileged agent serves on 10080 (its env vars say so). */
const API_IP = "198.18.96.78";

/**
 * The job: an HTTP answer on 127.0.0.1:`port` (socat), the Service by its env var and by name
 * (the agent's hosts file bound over /etc/hosts), each answer or error in the pod's home.
 */
function jobCommand(port: number): string {
  const answer = "HTTP/1.1 200 OK\\r\\nContent-Length: 18\\r\\nConnection: close\\r\\n\\r\\n" +
    "hello from the job";
  return [
    `printf '${answer}' > "$HOME/answer"`,
    `socat TCP-LISTEN:${port},bind=127.0.0.1,fork,reuseaddr SYSTEM:"cat $HOME/answer" &`,
    'curl -sS -m 5 "http://$WEB_SERVICE_HOST:$WEB_SERVICE_PORT/" > "$HOME/by-env.txt" 2>&1',
    'curl -sS -m 5 "http://$API_SERVICE_HOST:$API_SERVICE_PORT/" > "$HOME/by-env-api.txt" 2>&1',
    `unshare -rm sh -c 'mount --bind "$HOME/../state/tunnel.hosts" /etc/hosts && ` +
    `curl -sS -m 5 http://web.team.svc.cluster.local:8080/ && curl -sS -m 5 http://web:8080/' ` +
    '> "$HOME/by-name.txt" 2>&1',
    'echo "$WEB_SERVICE_HOST" > "$HOME/done"',
    "wait",
  ].join("\n");
}

Deno.test({
  name:
    "a SLURM job is reached at its pod IP and calls a Service by env var and by name, only through the tunnel",
  ignore: skip !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const lab = await networkLab();
    const slurm = await startSlurm();
    Deno.env.set("SLURM_CONF", slurm.conf);
    const stateDir = await Deno.makeTempDir({ prefix: "vk-slurm-tunnel-" });
    const backend = serviceBackend(lab, "0.0.0.0");
    const stop = new AbortController();
    const providers: Provider[] = [];
    try {
      await backend.route([{ ip: CLUSTER_IP, port: 8080 }, { ip: API_IP, port: 80 }], stateDir);
      const networks = new PodNetworks(
        { ...lab.network, cniBinDir: [lab.network.cniBinDir] },
        (await loadNetworkConfig(lab.network.cniConfDir))!,
        { stateDir, log: getLogger(["vkubelet", "test"]), nodeIPs: () => [lab.gateway] },
      );
      networks.setPodCIDRs([lab.podCIDR]);
      const services = new ListedServices();
      services.set([
        {
          namespace: "team",
          name: "web",
          clusterIP: CLUSTER_IP,
          ports: [{ port: 8080, protocol: "TCP" }],
        },
        {
          namespace: "team",
          name: "api",
          clusterIP: API_IP,
          ports: [{ port: 80, protocol: "TCP" }],
        },
      ]);
      // The agent as a job of nobody runs it: Deno and the agent's source readable by nobody.
      const deno = join(slurm.dir, "deno");
      await Deno.copyFile(Deno.execPath(), deno);
      await Deno.chmod(deno, 0o755);
      const denoDir = join(slurm.dir, "deno-dir");
      await Deno.mkdir(denoDir);
      await Deno.chown(denoDir, NOBODY.uid, NOBODY.gid);
      const agentMain = new URL("../../../app/agent/main.ts", import.meta.url).pathname;
      await using node = await startTunnelNode(
        new RemotePodNetworks(networks, stateDir),
        services,
        ["env", `DENO_DIR=${denoDir}`, deno, "run", "--no-config", "-A", agentMain],
      );
      const provider = (name: string, podNetwork?: ProviderDeps["podNetwork"]) => {
        const made = createProvider({
          cli: {},
          sharedDir: slurm.sharedDir,
          stateDir: join(slurm.dir, `vk-state-${name}`),
          fileOwner: NOBODY,
          statusInterval: "300ms",
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
      const pod = (name: string): Pod => ({
        metadata: { namespace: "team", name, uid: crypto.randomUUID() },
        spec: {
          restartPolicy: "Never",
          containers: [{
            name: "main",
            image: "busybox",
            command: ["sh", "-c", jobCommand(port)],
            ports: [{ containerPort: port }],
            // As the kubelet's service links give them: the ClusterIP.
            env: [
              { name: "WEB_SERVICE_HOST", value: CLUSTER_IP },
              { name: "WEB_SERVICE_PORT", value: "8080" },
              { name: "WEB_PORT", value: `tcp://${CLUSTER_IP}:8080` },
              { name: "API_SERVICE_HOST", value: API_IP },
              { name: "API_SERVICE_PORT", value: "80" },
            ],
          }],
        },
      });
      const home = (p: Pod) =>
        `${slurm.sharedDir}/team_${p.metadata!.name}_${p.metadata!.uid}/home`;
      const read = (p: Pod, file: string) =>
        Deno.readTextFile(`${home(p)}/${file}`).then((t) => t.trim(), () => "");
      const fromHost = (url: string) =>
        tryRun("ip", "netns", "exec", lab.name, "curl", "-sS", "-m", "5", url);

      // The tunnel on.
      const on = provider("vk-tunnel-on", node.tunnel);
      const job = pod("job");
      await on.createPod(job, {});
      const podIP = (await on.getPod("team", "job", {}))?.status?.podIP ?? "";
      assert.ok(
        podIP.startsWith(lab.podCIDR.slice(0, -5)),
        `pod IP ${podIP} not in ${lab.podCIDR}`,
      );
      await eventually(
        "the job to make its calls",
        async () => (await read(job, "done")) || false,
        90_000,
      );
      const agentLog = async () =>
        `agent: ${await read(job, "../state/tunnel.log")}\njob: ${await read(
          job,
          "../state/job.out",
        )}${await read(job, "../logs/main.0.log")}`;
      assert.match(await read(job, "done"), /^127\.\d+\.\d+\.\d+$/, await agentLog());
      assert.equal(await read(job, "by-env.txt"), `backend saw ${podIP}`);
      assert.equal(await read(job, "by-env-api.txt"), `backend saw ${podIP}`, "port 80 by env");
      assert.equal(await read(job, "by-name.txt"), `backend saw ${podIP}\nbackend saw ${podIP}`);
      let last = "";
      const inbound = await eventually("the job at its pod IP", async () => {
        const r = await fromHost(`http://${podIP}:${port}/`);
        last = `${r.stderr}\n${await agentLog()}`;
        return r.code === 0 && r.stdout;
      }, 20_000).catch((err) => {
        throw new Error(`${err.message}: ${last}`);
      });
      assert.equal(inbound, "hello from the job");

      // Deleted: the pod IP answers no more.
      await on.deletePod(job, {});
      await eventually("the pod to be gone", async () => !await on.getPod("team", "job", {}));
      const after = await fromHost(`http://${podIP}:${port}/`);
      assert.notEqual(after.stdout, "hello from the job", "the pod IP answered after deletion");

      // The tunnel off: a node without podNetwork.
      const off = provider("vk-tunnel-off");
      const plain = pod("plain");
      await off.createPod(plain, {});
      await eventually(
        "the plain job to make its calls",
        async () => (await read(plain, "done")) || false,
        90_000,
      );
      const plainIP = (await off.getPod("team", "plain", {}))?.status?.podIP ?? "";
      assert.ok(!plainIP.startsWith(lab.podCIDR.slice(0, -5)), `${plainIP} is on the test host`);
      assert.equal(await read(plain, "done"), CLUSTER_IP);
      assert.doesNotMatch(await read(plain, "by-env.txt"), /backend saw/);
      assert.doesNotMatch(await read(plain, "by-env-api.txt"), /backend saw/);
      assert.doesNotMatch(await read(plain, "by-name.txt"), /backend saw/);
      await off.deletePod(plain, {});
      await eventually(
        "the plain pod to be gone",
        async () => !await off.getPod("team", "plain", {}),
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
