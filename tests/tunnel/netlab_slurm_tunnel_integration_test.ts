/**
 * A SLURM job on the cluster's pod network through the tunnel (issue #64), against the real
 * network lab (tools/netlab): kube-proxy (nftables on host 1, iptables on host 2), CoreDNS, flannel
 * between two vkubelet hosts, and a third node, vkubelet `--provider=slurm --remote-pod-network`,
 * whose pods take IPs on host 2's CNI bridge (tools/netlab/remote_node.ts) while their jobs run
 * under Debian's slurmd as nobody. A process pod on host 1 calls the job's ClusterIP Service by its
 * DNS name and hears the job; the job calls a Service whose endpoint is that process pod, by name
 * (the agent's hosts file as its /etc/hosts) and by its env var, and the backend sees the job's pod
 * IP as the source. The same with the tunnel off (a slurm node without `--remote-pod-network`):
 * every call fails. Root only; run it under `flock /tmp/vk-netlab.lock` (one lab per machine).
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { netlabSkipReason, startNetlab } from "../../tools/netlab/lab.ts";
import { REMOTE_POD_CIDR, startRemoteNode } from "../../tools/netlab/remote_node.ts";
import { echoPid, echoPod, getFromPod } from "../../tools/netlab/echo_pod.ts";
import { run, tryRun, waitUntil } from "../../tools/netlab/command.ts";
import { NOBODY, startSlurm } from "../../tools/harness/slurm.ts";
import { freePort } from "../../app/run/parts.ts";

const skip = netlabSkipReason();
if (skip) console.warn(`netlab slurm tunnel test skipped: ${skip}`);

/**
 * The job: HTTP on 127.0.0.1:`port` (socat), then the echo Service by name (with the agent's
 * hosts file bound over /etc/hosts in an unprivileged mount namespace, when there is one) and by
 * its env var, each answer or error in a file of its home.
 */
function jobCommand(port: number, ns: string): string {
  const answer = "HTTP/1.1 200 OK\\r\\nContent-Length: 18\\r\\nConnection: close\\r\\n\\r\\n" +
    "hello from the job";
  const url = `http://echo.${ns}.svc.cluster.local:8080/`;
  return [
    `printf '${answer}' > "$HOME/answer"`,
    `socat TCP-LISTEN:${port},bind=127.0.0.1,fork,reuseaddr SYSTEM:"cat $HOME/answer" &`,
    'hosts="$HOME/../state/tunnel.hosts"',
    'if [ -f "$hosts" ]; then',
    `  unshare -rm sh -c "mount --bind $hosts /etc/hosts && curl -sS -m 5 ${url}" \\`,
    '    > "$HOME/by-name.txt" 2>&1',
    "else",
    `  curl -sS -m 5 ${url} > "$HOME/by-name.txt" 2>&1`,
    "fi",
    'curl -sS -m 5 "http://$ECHO_SERVICE_HOST:$ECHO_SERVICE_PORT/" > "$HOME/by-env.txt" 2>&1',
    'echo "$ECHO_SERVICE_HOST" > "$HOME/done"',
    "wait",
  ].join("\n");
}

Deno.test({
  name:
    "a SLURM job behind a ClusterIP Service answers a pod on another host by DNS name, and calls a Service by name from its pod IP, only through the tunnel",
  ignore: skip !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async (t) => {
    await using lab = await startNetlab();
    const { cluster } = lab;
    const [n1] = lab.nodes;
    const slurm = await startSlurm();
    await using _slurm = { [Symbol.asyncDispose]: () => slurm.stop() };
    const slurmNode = (name: string, tunnel: boolean) =>
      startRemoteNode(lab, {
        nodeName: `${n1.name.slice(0, -3)}-${name}`,
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
    const ns = await cluster.newNamespace("slurm-tunnel");
    const kubectl = cluster.kubectlIn(ns);
    await using _ns = {
      [Symbol.asyncDispose]: () =>
        run([
          cluster.binary,
          "kubectl",
          `--kubeconfig=${cluster.kubeconfigPath}`,
          "delete",
          "namespace",
          ns,
          "--wait=true",
          "--timeout=60s",
        ]).then(() => {}, () => {}),
    };
    const service = (name: string, port: number) => ({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name },
      spec: { selector: { app: name }, ports: [{ port: 8080, targetPort: port }] },
    });
    const clusterIp = async (name: string) =>
      (await kubectl(["get", "svc", name, "-o", "jsonpath={.spec.clusterIP}"])).trim();

    // The echo pod on host 1 and its Service, programmed in host 2 (whose kube-proxy the jobs'
    // calls meet) before the jobs start: each calls once.
    await kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: [echoPod("echo", n1.name, { app: "echo" }), service("echo", 8080)],
      }),
    );
    await kubectl(["wait", "--for=condition=Ready", "pod/echo", "--timeout=60s"]);
    const echoIp = await clusterIp("echo");
    await waitUntil("the echo Service from host 2", async () => {
      const res = await tryRun([
        "ip",
        "netns",
        "exec",
        lab.nodes[1].host.netns,
        "curl",
        "-sf",
        "-m",
        "2",
        `http://${echoIp}:8080/`,
      ]);
      return res.stdout.startsWith("echo ");
    }, { timeoutMs: 60_000, detail: () => lab.logs() });
    const client = await echoPid("echo");

    // Both jobs run on the one SLURM node's loopback (`runtime: none`): a port each.
    const ports = { job: freePort("127.0.0.1"), plain: freePort("127.0.0.1") };
    const job = (name: "job" | "plain", nodeName: string, port = ports[name]) => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, labels: { app: name } },
      spec: {
        nodeName,
        restartPolicy: "Never",
        terminationGracePeriodSeconds: 1,
        containers: [{
          name: "main",
          image: "busybox",
          command: ["sh", "-c", jobCommand(port, ns)],
          ports: [{ containerPort: port }],
        }],
      },
    });
    await kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: [
          job("job", on.name),
          service("job", ports.job),
          job("plain", off.name),
          service("plain", ports.plain),
        ],
      }),
    );
    const uid = async (name: string) =>
      (await kubectl(["get", "pod", name, "-o", "jsonpath={.metadata.uid}"])).trim();
    const home = async (name: string) => `${slurm.sharedDir}/${ns}_${name}_${await uid(name)}/home`;
    const read = async (name: string, file: string) =>
      await Deno.readTextFile(`${await home(name)}/${file}`).then((s) => s.trim(), () => "");
    const diagnose = async (name: string, node: typeof on) =>
      `pod: ${await kubectl([
        "get",
        "pod",
        name,
        "-o",
        "jsonpath={.status}",
      ])}\nevents: ${await kubectl(
        ["get", "events", "-o", "custom-columns=OBJ:.involvedObject.name,MSG:.message"],
      )}\nagent: ${await read(name, "../state/tunnel.log")}\njob: ${await read(
        name,
        "../state/job.out",
      )}\nvkubelet: ${node.vkubelet.output().slice(-3000)}`;
    for (const [name, node] of [["job", on], ["plain", off]] as const) {
      await waitUntil(
        `pod ${name} to make its calls`,
        async () => await read(name, "done") || false,
        {
          timeoutMs: 120_000,
          detail: () => diagnose(name, node),
        },
      );
    }
    const podIp = (await kubectl(["get", "pod", "job", "-o", "jsonpath={.status.podIP}"])).trim();

    await t.step("the job's pod IP is on the remote node's range of host 2", () => {
      const prefix = REMOTE_POD_CIDR.split(".").slice(0, 3).join(".");
      const last = Number(podIp.split(".")[3]);
      assert.ok(podIp.startsWith(`${prefix}.`) && last >= 128, `pod IP ${podIp}`);
    });

    await t.step(
      "a pod on host 1 reaches the job through its Service's DNS name (CoreDNS, kube-proxy)",
      async () => {
        const url = `http://job.${ns}.svc.cluster.local:8080/`;
        let last = "";
        const answer = await waitUntil("the job's answer", async () => {
          const res = await getFromPod(client, url);
          last = res.stderr;
          return res.code === 0 && res.stdout;
        }, { timeoutMs: 30_000, detail: async () => `${last}\n${await diagnose("job", on)}` });
        assert.equal(answer, "hello from the job");
      },
    );

    await t.step("the job calls a Service by name and by env var from its pod IP", async () => {
      const detail = await diagnose("job", on);
      assert.equal(await read("job", "by-name.txt"), `echo ${podIp}`, detail);
      assert.equal(await read("job", "by-env.txt"), `echo ${podIp}`, detail);
      assert.match(await read("job", "done"), /^127\.\d+\.\d+\.\d+$/, "the agent's address");
    });

    await t.step("with the tunnel off, neither direction works", async () => {
      const plainIp = (await kubectl(["get", "pod", "plain", "-o", "jsonpath={.status.podIP}"]))
        .trim();
      assert.ok(!plainIp.startsWith("198.19."), `pod IP ${plainIp} is on the pod network`);
      const res = await getFromPod(client, `http://plain.${ns}.svc.cluster.local:8080/`);
      assert.notEqual(res.code, 0, `the Service reached the job: ${res.stdout}`);
      assert.equal(await read("plain", "done"), echoIp, "the env var is the ClusterIP");
      assert.doesNotMatch(await read("plain", "by-name.txt"), /^echo /, "the call by name");
      assert.doesNotMatch(await read("plain", "by-env.txt"), /^echo /, "the call by env var");
    });
  },
});
