/**
 * Pod networks by CNI in the process provider, against the reference plugins (bridge,
 * host-local, portmap, loopback) run in a test host namespace (./_network_lab.ts): each pod gets
 * its own namespace and IP from the node's podCIDR, pods reach each other by IP, a hostPort goes
 * through portmap, exec, probes and port-forward run in the pod's namespace, DEL releases the
 * lease and the veth, and a crash's leftovers are collected at the next start.
 * @module
 */
import assert from "node:assert/strict";
import type { Container } from "kubernetes-types/core/v1.d.ts";
import { cleanup, collector, makePod, startProvider, waitFor } from "./_helpers.ts";
import { networkLab, networkSkipReason, sh, tryRun } from "./_network_lab.ts";
import { managedHostsContent } from "../../../providers/process/network/dns.ts";

const skip = networkSkipReason();
const ignore = skip !== undefined;
if (skip) console.warn(`network tests skipped: ${skip}`);

const SERVE = "import http.server as h, socketserver as s; " +
  "s.ThreadingTCPServer.allow_reuse_address = True; " +
  "s.ThreadingTCPServer(('0.0.0.0', 8080), h.SimpleHTTPRequestHandler).serve_forever()";

/** An HTTP server on :8080 answering /id with `id`. */
function server(id: string, extra: Partial<Container> = {}): Container {
  return {
    name: "web",
    image: "x",
    // socketserver, not http.server's HTTPServer: that one looks its address up in DNS first.
    command: ["sh", "-c", `echo ${id} > id && exec /usr/bin/python3 -c "$0"`, SERVE],
    ...extra,
  };
}

async function execOut(
  t: Awaited<ReturnType<typeof startProvider>>,
  pod: string,
  command: string[],
): Promise<{ code: number; out: string }> {
  const out = collector(), err = collector();
  const code = await t.provider.runInContainer({ namespace: "default", pod, container: "web" }, {
    command,
    io: { stdout: out.writable, stderr: err.writable, tty: false },
  });
  return { code, out: out.text() + err.text() };
}

async function podIP(t: Awaited<ReturnType<typeof startProvider>>, name: string) {
  const status = await t.provider.getPodStatus("default", name, {});
  return status?.podIP ?? "";
}

Deno.test({
  name: "two pods get their own IPs from the node's podCIDR, both serve :8080 and reach each other",
  ignore,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const lab = await networkLab();
    const t = await startProvider({ config: { network: lab.network } });
    const probe = { httpGet: { path: "/id", port: 8080 }, periodSeconds: 1 };
    const a = makePod([server("pod-a", { readinessProbe: probe })]);
    const b = makePod([server("pod-b", { livenessProbe: { tcpSocket: { port: 8080 } } })]);
    const [nameA, nameB] = [a.metadata!.name!, b.metadata!.name!];
    try {
      await t.provider.createPod(a, {});
      await t.provider.createPod(b, {});
      const ipA = await podIP(t, nameA), ipB = await podIP(t, nameB);
      const prefix = lab.podCIDR.replace(/0\/24$/, "");
      assert.ok(
        ipA.startsWith(prefix) && ipB.startsWith(prefix),
        `${ipA} ${ipB} in ${lab.podCIDR}`,
      );
      assert.notEqual(ipA, ipB);
      // The readiness probe (httpGet to the pod IP, in its namespace) passes.
      await waitFor(
        "pod a ready",
        () => t.provider.runnerOf("default", nameA)?.live("web")?.instance.record.ready,
      );
      // Both listen on :8080; the host reaches each at its own IP.
      await waitFor(
        "pod b serves",
        async () =>
          (await tryRun("ip", "netns", "exec", lab.name, "curl", "-s", `http://${ipB}:8080/id`))
            .stdout === "pod-b",
      );
      assert.equal(await lab.inHost("curl", "-s", `http://${ipA}:8080/id`), "pod-a");
      // Pod a -> pod b by IP, from an exec session in pod a's namespace.
      const fromA = await execOut(t, nameA, [
        "curl",
        "-s",
        "--max-time",
        "3",
        `http://${ipB}:8080/id`,
      ]);
      assert.deepEqual(fromA, { code: 0, out: "pod-b\n" });
      // exec runs in the pod's namespace: its eth0 carries the pod IP.
      const addr = await execOut(t, nameA, ["ip", "-o", "-4", "addr", "show", "eth0"]);
      assert.match(addr.out, new RegExp(` inet ${ipA.replaceAll(".", "\\.")}/24 `));
      // port-forward reaches :8080 inside the pod's namespace.
      const out = collector();
      await t.provider.portForward({ namespace: "default", name: nameB }, {
        port: 8080,
        stream: {
          readable: new Blob(["GET /id HTTP/1.0\r\n\r\n"]).stream(),
          writable: out.writable,
        },
      });
      assert.match(out.text(), /\r\n\r\npod-b\n$/);
      // The pod's /etc/hosts is the kubelet's.
      const hosts = await execOut(t, nameA, ["cat", "/etc/hosts"]);
      assert.equal(hosts.out, managedHostsContent([ipA], nameA, ""));
      const resolv = await execOut(t, nameA, ["cat", "/etc/resolv.conf"]);
      assert.equal(
        resolv.out,
        "search default.svc.cluster.local svc.cluster.local cluster.local example.test\nnameserver 198.18.96.10\noptions ndots:5\n",
      );
    } finally {
      await cleanup(t.provider, a);
      await cleanup(t.provider, b);
      await t.close();
      await lab.close();
    }
  },
});

Deno.test({
  name:
    "a hostPort reaches the pod through portmap, and DEL releases the IP, the veth and the rule",
  ignore,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const lab = await networkLab();
    const t = await startProvider({ config: { network: lab.network } });
    const pod = makePod([server("hp", { ports: [{ containerPort: 8080, hostPort: 18080 }] })]);
    const name = pod.metadata!.name!;
    try {
      const linksBefore = await lab.links();
      await t.provider.createPod(pod, {});
      const ip = await podIP(t, name);
      assert.ok(await Deno.stat(`${lab.ipamDir}/${ip}`));
      assert.equal((await lab.links()).length, linksBefore.length + 2, "bridge and veth");
      // A client namespace beside the host, on a veth: the hostPort on the host's address.
      const client = `${lab.name}-c`;
      await sh("ip", "netns", "add", client);
      try {
        await lab.inHost(
          "ip",
          "link",
          "add",
          "vkt-ul",
          "type",
          "veth",
          "peer",
          "name",
          "vkt-ul",
          "netns",
          client,
        );
        await lab.inHost("ip", "addr", "add", "198.18.30.1/24", "dev", "vkt-ul");
        await lab.inHost("ip", "link", "set", "vkt-ul", "up");
        await sh(
          "ip",
          "netns",
          "exec",
          client,
          "ip",
          "addr",
          "add",
          "198.18.30.2/24",
          "dev",
          "vkt-ul",
        );
        await sh("ip", "netns", "exec", client, "ip", "link", "set", "vkt-ul", "up");
        const got = await waitFor("hostPort answers", async () => {
          const r = await tryRun(
            "ip",
            "netns",
            "exec",
            client,
            "curl",
            "-s",
            "--max-time",
            "2",
            "http://198.18.30.1:18080/id",
          );
          return r.stdout === "hp" && r.stdout;
        });
        assert.equal(got, "hp");
      } finally {
        await tryRun("ip", "netns", "del", client);
      }
      const netns = t.provider.runnerOf("default", name)!.record.network!.netns!;
      await cleanup(t.provider, pod);
      await assert.rejects(Deno.stat(`${lab.ipamDir}/${ip}`), Deno.errors.NotFound);
      assert.deepEqual((await lab.links()).filter((l) => l.startsWith("veth")), []);
      const rules = await tryRun(
        "ip",
        "netns",
        "exec",
        lab.name,
        "nft",
        "list",
        "table",
        "ip",
        "cni_hostport",
      );
      assert.doesNotMatch(rules.stdout, /18080/);
      await assert.rejects(Deno.stat(netns), Deno.errors.NotFound);
    } finally {
      await cleanup(t.provider, pod);
      await t.close();
      await lab.close();
    }
  },
});

Deno.test({
  name: "a pod's network left behind by a crash is collected at the next start",
  ignore,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const lab = await networkLab();
    const first = await startProvider({ config: { network: lab.network } });
    const pod = makePod([{ name: "web", image: "x", command: ["sleep", "60"] }]);
    const name = pod.metadata!.name!;
    const runner = () => first.provider.runnerOf("default", name);
    await first.provider.createPod(pod, {});
    const ip = await podIP(first, name);
    const { netns } = runner()!.record.network!;
    const pid = await waitFor("running", () => runner()?.live("web")?.instance.record.pid);
    // The crash: vkubelet goes away mid-delete, its containers are gone, its record too.
    await first.close({ keepState: true });
    Deno.kill(-pid, "SIGKILL");
    await waitFor(
      "container gone",
      async () => (await tryRun("kill", "-0", String(pid))).code !== 0,
    );
    await Deno.remove(runner()?.paths.dir ?? `${first.stateDir}/pods`, { recursive: true });
    assert.ok(await Deno.stat(`${lab.ipamDir}/${ip}`));
    const second = await startProvider({
      stateDir: first.stateDir,
      config: { network: lab.network },
    });
    try {
      await assert.rejects(Deno.stat(`${lab.ipamDir}/${ip}`), Deno.errors.NotFound);
      await assert.rejects(Deno.stat(netns!), Deno.errors.NotFound);
      assert.deepEqual((await lab.links()).filter((l) => l.startsWith("veth")), []);
    } finally {
      await second.close();
      await lab.close();
    }
  },
});

Deno.test({
  name:
    "the node registers with its configured podCIDR, and the Node's podCIDRs become new pods' range",
  ignore,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const lab = await networkLab();
    const t = await startProvider({ config: { network: lab.network } });
    const allocated = lab.podCIDR.replace(/^198\.19\./, "198.18.");
    const pod = makePod([{ name: "web", image: "x", command: ["sleep", "30"] }]);
    try {
      const node = { metadata: { name: "vk-test" }, spec: {}, status: {} };
      t.provider.configureNode(node);
      assert.deepEqual(node.spec, { podCIDR: lab.podCIDR, podCIDRs: [lab.podCIDR] });
      // The controller-manager allocated another range (--allocate-node-cidrs): it wins.
      t.provider.observeNode({ ...node, spec: { podCIDR: allocated, podCIDRs: [allocated] } });
      await t.provider.createPod(pod, {});
      const ip = await podIP(t, pod.metadata!.name!);
      assert.ok(ip.startsWith(allocated.replace(/0\/24$/, "")), `${ip} in ${allocated}`);
    } finally {
      await cleanup(t.provider, pod);
      await t.close();
      await lab.close();
    }
  },
});
