/**
 * The Kubernetes networking checks a user would run by hand, through the real stack: two
 * vkubelet nodes (process provider, CNI bridge) in two test hosts joined by flannel, kube-proxy
 * on each (nftables on host 1, iptables on host 2), CoreDNS behind the cluster DNS Service, on a
 * private control plane whose Service range is 198.18.96.0/24 (tools/netlab/lab.ts). The
 * apiserver cannot reach the nodes' kubelet APIs, so the checks enter a pod's namespaces with
 * nsenter instead of `kubectl exec`. Root only.
 * @module
 */
import assert from "node:assert/strict";
import { netlabSkipReason, startNetlab } from "../../tools/netlab/lab.ts";
import { NETLAB_ADDRESSES } from "../../tools/netlab/hosts.ts";
import { run, tryRun, waitUntil } from "../../tools/netlab/command.ts";
import { ECHO, GET } from "../../tools/netlab/echo_pod.ts";

const skip = netlabSkipReason();
if (skip) console.warn(`pod network tests skipped: ${skip}`);

function pod(name: string, node: string, spec: Record<string, unknown> = {}, labels = {}) {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, labels },
    spec: {
      nodeName: node,
      terminationGracePeriodSeconds: 1,
      containers: [{
        name: "main",
        image: "python:3",
        command: ["/usr/bin/python3", "-c", ECHO, name],
        ports: [{ containerPort: 8080 }],
        readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
      }],
      ...spec,
    },
  };
}

/** The pid of the container whose command line ends with pod `name`'s echo argument. */
async function containerPid(name: string): Promise<number> {
  return await waitUntil(`the process of pod ${name}`, async () => {
    for await (const entry of Deno.readDir("/proc")) {
      if (!/^\d+$/.test(entry.name)) continue;
      const argv = (await Deno.readTextFile(`/proc/${entry.name}/cmdline`).catch(() => ""))
        .split("\0").filter(Boolean);
      if (argv[0] === "/usr/bin/python3" && argv.at(-1) === name && argv[2] === ECHO) {
        return Number(entry.name);
      }
    }
    return undefined;
  }, { timeoutMs: 10_000 });
}

/** Runs GET `url` inside pod `pid`'s network and mount namespaces and root: as the pod would. */
function getFromPod(pid: number, url: string) {
  return tryRun([
    "nsenter",
    `--target=${pid}`,
    "--net",
    "--mount",
    "--root",
    "--wd=/",
    "/usr/bin/python3",
    "-c",
    GET,
    url,
  ]);
}

Deno.test({
  name: "pods on two vkubelet hosts reach each other, Services by DNS name and hostPorts",
  ignore: skip !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async (t) => {
    await using lab = await startNetlab();
    const { cluster } = lab;
    const [n1, n2] = lab.nodes;
    const ns = await cluster.newNamespace("netlab");
    const kubectl = cluster.kubectlIn(ns);
    try {
      const items = [
        pod("echo-a", n2.name, {}, { app: "echo" }),
        pod("echo-b", n2.name, {}, { app: "echo" }),
        pod("twin-1", n1.name),
        pod("twin-2", n1.name),
        pod("client", n1.name),
        pod("hp", n1.name, {
          dnsPolicy: "None",
          dnsConfig: {
            nameservers: [NETLAB_ADDRESSES.dnsIp],
            searches: ["netlab.test"],
            options: [{ name: "ndots", value: "2" }],
          },
        }),
        {
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "echo" },
          spec: { selector: { app: "echo" }, ports: [{ port: 80, targetPort: 8080 }] },
        },
      ];
      (items[5].spec as { containers: { ports: unknown[] }[] }).containers[0].ports = [
        { containerPort: 8080, hostPort: 18080, protocol: "TCP" },
      ];
      await kubectl(
        ["apply", "-f", "-"],
        JSON.stringify({ apiVersion: "v1", kind: "List", items }),
      );
      await kubectl(["wait", "--for=condition=Ready", "pod", "--all", "--timeout=120s"]);
      const ips: Record<string, string> = Object.fromEntries(
        (await kubectl([
          "get",
          "pods",
          "-o",
          "jsonpath={range .items[*]}{.metadata.name}={.status.podIP} {end}",
        ]))
          .trim().split(" ").map((kv) => kv.split("=")),
      );
      const client = await containerPid("client");

      await t.step("each pod gets an IP from its node's podCIDR", () => {
        for (const [name, ip] of Object.entries(ips)) {
          const prefix = (name.startsWith("echo") ? n2 : n1).host.podCidr.replace(/0\/24$/, "");
          assert.ok(ip.startsWith(prefix), `${name}: ${ip} is not in ${prefix}0/24`);
        }
      });

      await t.step(
        "a pod on host 1 calls a Service with endpoints on host 2 by name and hears every endpoint",
        async () => {
          const clusterIp =
            (await kubectl(["get", "svc", "echo", "-o", "jsonpath={.spec.clusterIP}"])).trim();
          assert.ok(
            clusterIp.startsWith("198.18.96."),
            `ClusterIP ${clusterIp} from the lab's range`,
          );
          // The EndpointSlice controller fills the slice from the pods' IPs and readiness.
          const heard = new Set<string>();
          await waitUntil("answers from both endpoints", async () => {
            for (const url of ["http://echo/", `http://echo.${ns}.svc.cluster.local/`]) {
              const res = await getFromPod(client, url);
              if (res.code === 0) heard.add(res.stdout.split(" ")[0]);
            }
            return heard.size === 2;
          }, { timeoutMs: 60_000, detail: async () => `heard ${[...heard]}; ${await lab.logs()}` });
          assert.deepEqual([...heard].sort(), ["echo-a", "echo-b"]);
        },
      );

      await t.step("a Service keeps the calling pod's own IP across hosts", async () => {
        const res = await getFromPod(client, "http://echo/");
        assert.equal(res.code, 0, res.stderr);
        assert.equal(res.stdout.split(" ")[1], ips.client);
      });

      await t.step("pod to pod across hosts keeps source IPs", async () => {
        for (const target of ["echo-a", "echo-b"]) {
          const res = await getFromPod(client, `http://${ips[target]}:8080/`);
          assert.equal(res.stdout, `${target} ${ips.client}`, res.stderr);
        }
      });

      await t.step("two pods on one host listen on the same port", async () => {
        for (const twin of ["twin-1", "twin-2"]) {
          const res = await getFromPod(client, `http://${ips[twin]}:8080/`);
          assert.equal(res.stdout, `${twin} ${ips.client}`, res.stderr);
        }
      });

      await t.step("a hostPort on host 1 answers from host 2", async () => {
        const res = await n2.host.run(
          "curl",
          "-s",
          "--max-time",
          "5",
          `http://${n1.host.underlayIp}:18080/`,
        );
        assert.equal(res.split(" ")[0], "hp");
      });

      await t.step("a pod's resolv.conf is the kubelet's, byte for byte", async () => {
        const clusterFirst = await Deno.readTextFile(`/proc/${client}/root/etc/resolv.conf`);
        assert.equal(
          clusterFirst,
          `search ${ns}.svc.cluster.local svc.cluster.local cluster.local\n` +
            `nameserver ${NETLAB_ADDRESSES.dnsIp}\noptions ndots:5\n`,
        );
        const none = await Deno.readTextFile(
          `/proc/${await containerPid("hp")}/root/etc/resolv.conf`,
        );
        assert.equal(
          none,
          `search netlab.test\nnameserver ${NETLAB_ADDRESSES.dnsIp}\noptions ndots:2\n`,
        );
      });
    } finally {
      await run([
        cluster.binary,
        "kubectl",
        `--kubeconfig=${cluster.kubeconfigPath}`,
        "delete",
        "namespace",
        ns,
        "--wait=true",
        "--timeout=60s",
      ]).catch(() => {});
    }
  },
});
