/**
 * `--remote-pod-network` through vkubelet's own start-up, as an operator runs it: vkubelet (a
 * process, `--provider=slurm`) on the local control plane with the file naming a test host's CNI
 * network (198.19.x.0/24); a real single-node SLURM; a ClusterIP Service made with kubectl (an nft
 * DNAT in the test host stands in for kube-proxy's rule) whose backend answers with the caller's
 * address. A pod made with kubectl gets `status.podIP` on the test host's network, answers there,
 * and calls the Service by the env var vkubelet resolved for it (service links) from that IP. After
 * vkubelet restarts (SIGTERM, the same flags) the same IP answers again through the pod's agent,
 * which reconnected; once deleted, its IP answers no more. Root only.
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Pod, Service } from "kubernetes-types/core/v1.d.ts";
import { useCluster } from "../../tools/cluster/harness.ts";
import { startVkubelet } from "../../tools/cluster/vkubelet.ts";
import { NOBODY, startSlurm } from "../../tools/harness/slurm.ts";
import { eventually } from "../../tools/harness/wait.ts";
import { freePort } from "../../app/run/parts.ts";
import { networkLab, networkSkipReason, tryRun } from "../providers/process/_network_lab.ts";
import { serviceBackend } from "./_service_backend.ts";

const skip = networkSkipReason();
if (skip) console.warn(`start-up tunnel test skipped: ${skip}`);

Deno.test({
  name:
    "vkubelet with --remote-pod-network: a SLURM pod made by kubectl answers at its pod IP, calls a Service by its env var, and answers there again after a vkubelet restart",
  ignore: skip !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    // Service IPs a pod's namespace can route (the default cluster's are in 127.0.0.0/8).
    const cluster = await useCluster("netlab", { serviceRange: "198.18.96.0/24" });
    const lab = await networkLab();
    const slurm = await startSlurm();
    const dir = await Deno.makeTempDir({ prefix: "vk-startup-tunnel-" });
    await Deno.chmod(dir, 0o755);
    const backend = serviceBackend(lab, "0.0.0.0");
    const nodeName = `vk-tunnel-${crypto.randomUUID().slice(0, 6)}`;
    const ns = await cluster.newNamespace("tunnel");
    const kubectl = cluster.kubectlIn(ns);
    let node: Awaited<ReturnType<typeof startVkubelet>> | undefined;
    try {
      const service: Service = {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "web" },
        spec: { ports: [{ port: 8080, protocol: "TCP" }] },
      };
      await kubectl(["apply", "-f", "-"], JSON.stringify(service));
      const clusterIP =
        (await kubectl(["get", "service", "web", "-o", "jsonpath={.spec.clusterIP}"]))
          .trim();
      await backend.route([{ ip: clusterIP, port: 8080 }], dir);
      // The agent as a job of nobody runs it: Deno and the agent's source readable by nobody.
      const deno = join(dir, "deno");
      await Deno.copyFile(Deno.execPath(), deno);
      await Deno.chmod(deno, 0o755);
      const denoDir = join(dir, "deno-dir");
      await Deno.mkdir(denoDir);
      await Deno.chown(denoDir, NOBODY.uid, NOBODY.gid);
      const agentMain = new URL("../../app/agent/main.ts", import.meta.url).pathname;
      const file = join(dir, "remote-pod-network.yaml");
      await Deno.writeTextFile(
        file,
        JSON.stringify({
          ...lab.network,
          cniBinDir: [lab.network.cniBinDir],
          stateDir: join(dir, "state"),
          agentCommand: ["env", `DENO_DIR=${denoDir}`, deno, "run", "--no-config", "-A", agentMain],
        }),
      );
      node = await startVkubelet(cluster, {
        nodeName,
        provider: "slurm",
        providerConfig: JSON.stringify({
          cli: {},
          sharedDir: slurm.sharedDir,
          stateDir: join(slurm.dir, "vk-state"),
          fileOwner: NOBODY,
          statusInterval: "500ms",
        }),
        env: slurm.env,
        args: [`--remote-pod-network=${file}`],
      });
      // The file's podCIDR is the Node's (registered with it), as kube-proxy and routes read it.
      assert.equal(
        (await cluster.kubectl(["get", "node", nodeName, "-o", "jsonpath={.spec.podCIDR}"]))
          .stdout.trim(),
        lab.podCIDR,
      );
      const port = freePort("127.0.0.1");
      const answer = "HTTP/1.1 200 OK\\r\\nContent-Length: 18\\r\\nConnection: close\\r\\n\\r\\n" +
        "hello from the job";
      const pod: Pod = {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "job" },
        spec: {
          nodeName,
          tolerations: [{ operator: "Exists" }],
          restartPolicy: "Never",
          terminationGracePeriodSeconds: 1,
          containers: [{
            name: "main",
            image: "busybox",
            ports: [{ containerPort: port }],
            command: [
              "sh",
              "-c",
              [
                `printf '${answer}' > "$HOME/answer"`,
                `socat TCP-LISTEN:${port},bind=127.0.0.1,fork,reuseaddr SYSTEM:"cat $HOME/answer" &`,
                'curl -sS -m 5 "http://$WEB_SERVICE_HOST:$WEB_SERVICE_PORT/" 2>&1',
                "echo; echo called $WEB_SERVICE_HOST",
                "wait",
              ].join("\n"),
            ],
          }],
        },
      };
      await kubectl(["apply", "-f", "-"], JSON.stringify(pod));
      const podIP = await eventually("the pod's IP", async () => {
        const ip = (await kubectl(["get", "pod", "job", "-o", "jsonpath={.status.podIP}"])).trim();
        return ip.startsWith(lab.podCIDR.slice(0, -5)) && ip;
      }, 60_000).catch((err) => {
        throw new Error(`${err.message}\n${node!.output().slice(-3000)}`);
      });
      const logs = await eventually("the call", async () => {
        const text = await kubectl(["logs", "job"]).catch(() => "");
        return text.includes("called") && text;
      }, 90_000);
      const tunnelLog = () =>
        node!.output().split("\n").filter((l) => /tunnel|agent/i.test(l)).slice(-20).join("\n");
      assert.match(
        logs,
        new RegExp(`backend saw ${podIP.replaceAll(".", "\\.")}`),
        `${clusterIP}: ${logs}\n${tunnelLog()}`,
      );
      assert.match(logs, /called 127\.\d+\.\d+\.\d+/, "the env var was not the agent's address");
      const fromHost = () =>
        tryRun(
          "ip",
          "netns",
          "exec",
          lab.name,
          "curl",
          "-sS",
          "-m",
          "5",
          `http://${podIP}:${port}/`,
        );
      const inbound = await eventually("the pod at its IP", async () => {
        const r = await fromHost();
        return r.code === 0 && r.stdout;
      }, 20_000);
      assert.equal(inbound, "hello from the job");

      // A vkubelet restart (SIGTERM, the same flags again) keeps the pod's network: it is
      // adopted and reattached with the same IP, and its agent, running on in the job,
      // reconnects with its credential and serves the pod IP again.
      const stopped = await node.stop();
      assert.equal(stopped.code, 0, node.output().slice(-2000));
      node = await startVkubelet(cluster, {
        nodeName,
        provider: "slurm",
        like: node,
        env: slurm.env,
        args: [`--remote-pod-network=${file}`],
      });
      const again = await eventually("the pod at its IP after a restart", async () => {
        const r = await fromHost();
        return r.code === 0 && r.stdout;
      }, 60_000).catch((err) => {
        throw new Error(`${err.message}\n${tunnelLog()}`);
      });
      assert.equal(again, "hello from the job");
      assert.match(node.output(), /tunnel of pod \S*job\S* connected/, tunnelLog());
      assert.equal(
        (await kubectl(["get", "pod", "job", "-o", "jsonpath={.status.podIP}"])).trim(),
        podIP,
        "the pod's IP changed across the restart",
      );

      await kubectl(["delete", "pod", "job", "--wait=true", "--timeout=60s"]);
      const after = await fromHost();
      assert.notEqual(after.stdout, "hello from the job", "the pod IP answered after deletion");
    } finally {
      await node?.stop();
      await backend.stop();
      await slurm.stop();
      await lab.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
