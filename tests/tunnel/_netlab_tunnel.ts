/**
 * The checks the network lab's tunnel tests share (slurm and interlink): an echo pod on host 1
 * behind a ClusterIP Service; a job on the remote node with the tunnel and one on the node without
 * it, each serving HTTP on 127.0.0.1 behind a Service of its own and calling the echo Service by
 * name (the agent's hosts file bound over /etc/hosts in an unprivileged mount namespace, when the
 * agent wrote one) and by its env var; then, through CoreDNS and kube-proxy, a pod on host 1 calls
 * each job's Service by DNS name, as do a pod on host 2 and the job itself (a hairpin). With the
 * tunnel every call works and the echo pod sees the job's pod IP; without it none does.
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Netlab } from "../../tools/netlab/lab.ts";
import type { RemoteNode } from "../../tools/netlab/remote_node.ts";
import { echoPid, echoPod, getFromPod } from "../../tools/netlab/echo_pod.ts";
import { run, tryRun, waitUntil } from "../../tools/netlab/command.ts";
import { freePort } from "../../app/run/parts.ts";

/** What differs between the providers. */
export interface RemoteJobs {
  lab: Netlab;
  /** The remote node with the tunnel, and the same without. */
  on: RemoteNode;
  off: RemoteNode;
  /** A shell expression for the agent's hosts file, as the job sees it. */
  hostsFile: string;
  /** A directory the test and the jobs share (each job writes in `<dir>/<pod>`). */
  outDir: string;
  /** What the backend says of `pod` (ns, name), for a failing assertion. */
  diagnose(ns: string, pod: string): Promise<string>;
}

/**
 * The job: HTTP on 127.0.0.1:`port` (socat), then the echo Service by name and by its env var,
 * each answer or error in a file of `$OUT`; `done` holds the env var's address.
 */
function jobCommand(name: string, port: number, ns: string, hostsFile: string): string {
  const answer = "HTTP/1.1 200 OK\\r\\nContent-Length: 18\\r\\nConnection: close\\r\\n\\r\\n" +
    "hello from the job";
  const url = `http://echo.${ns}.svc.cluster.local:8080/`;
  const self = `http://${name}.${ns}.svc.cluster.local:8080/`;
  return [
    `printf '${answer}' > "$OUT/answer"`,
    `socat TCP-LISTEN:${port},bind=127.0.0.1,fork,reuseaddr SYSTEM:"cat $OUT/answer" &`,
    `hosts="${hostsFile}"`,
    'if [ -f "$hosts" ]; then',
    `  unshare -rm sh -c "mount --bind $hosts /etc/hosts && curl -sS -m 5 ${url}" \\`,
    '    > "$OUT/by-name.txt" 2>&1',
    "else",
    `  curl -sS -m 5 ${url} > "$OUT/by-name.txt" 2>&1`,
    "fi",
    'curl -sS -m 5 "http://$ECHO_SERVICE_HOST:$ECHO_SERVICE_PORT/" > "$OUT/by-env.txt" 2>&1',
    'echo "$ECHO_SERVICE_HOST" > "$OUT/done"',
    // Its own Service by name (once the agent lists it), which kube-proxy sends back to the
    // job's own pod IP: a hairpin.
    "for _ in $(seq 40); do",
    `  if [ -f "$hosts" ] && grep -q "${name}\\.${ns}\\.svc" "$hosts"; then`,
    `    unshare -rm sh -c "mount --bind $hosts /etc/hosts && curl -sS -m 5 ${self}" \\`,
    '      > "$OUT/self.txt" 2>&1 && break',
    "  fi",
    "  sleep 1",
    "done",
    "wait",
  ].join("\n");
}

function service(name: string, targetPort: number) {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name },
    spec: { selector: { app: name }, ports: [{ port: 8080, targetPort }] },
  };
}

/** Runs the checks as steps of `t`; see the module doc. */
export async function checkRemoteJobs(t: Deno.TestContext, jobs: RemoteJobs): Promise<void> {
  const { lab, on, off } = jobs;
  const { cluster } = lab;
  const [n1, n2] = lab.nodes;
  const ns = await cluster.newNamespace("tunnel");
  const kubectl = cluster.kubectlIn(ns);
  try {
    // The echo Service programmed in host 2 (whose kube-proxy the jobs' calls meet) before the
    // jobs start: each calls once.
    await kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: [
          echoPod("echo", n1.name, { app: "echo" }),
          echoPod("near", n2.name),
          service("echo", 8080),
        ],
      }),
    );
    await kubectl(["wait", "--for=condition=Ready", "pod/echo", "pod/near", "--timeout=60s"]);
    const echoIp = (await kubectl(["get", "svc", "echo", "-o", "jsonpath={.spec.clusterIP}"]))
      .trim();
    await waitUntil("the echo Service from host 2", async () => {
      const url = `http://${echoIp}:8080/`;
      const res = await tryRun([
        "ip",
        "netns",
        "exec",
        n2.host.netns,
        "curl",
        "-sf",
        "-m",
        "2",
        url,
      ]);
      return res.stdout.startsWith("echo ");
    }, { timeoutMs: 60_000, detail: () => lab.logs() });
    const client = await echoPid("echo");
    const near = await echoPid("near");

    // Both jobs may run on one machine's loopback: a port each.
    const ports = { job: freePort("127.0.0.1"), plain: freePort("127.0.0.1") };
    const job = async (name: "job" | "plain", nodeName: string) => {
      const out = join(jobs.outDir, name);
      await Deno.mkdir(out);
      await Deno.chmod(out, 0o777);
      return {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name, labels: { app: name } },
        spec: {
          nodeName,
          restartPolicy: "Never",
          terminationGracePeriodSeconds: 1,
          containers: [{
            name: "main",
            image: "busybox:1.36",
            command: ["/bin/sh", "-c", jobCommand(name, ports[name], ns, jobs.hostsFile)],
            ports: [{ containerPort: ports[name] }],
            env: [{ name: "OUT", value: out }],
          }],
        },
      };
    };
    const items = [
      await job("job", on.name),
      service("job", ports.job),
      await job("plain", off.name),
      service("plain", ports.plain),
    ];
    await kubectl(["apply", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items }));
    const read = (name: string, file: string) =>
      Deno.readTextFile(join(jobs.outDir, name, file)).then((s) => s.trim(), () => "");
    const diagnose = async (name: string, node: RemoteNode) =>
      `pod: ${await kubectl(["get", "pod", name, "-o", "jsonpath={.status}"])}\n${await jobs
        .diagnose(ns, name)}\nvkubelet: ${node.vkubelet.output().slice(-3000)}`;
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
    // kube-proxy routes only to Ready endpoints, and the job is Ready once its backend says it
    // runs: interLink's SLURM plugin answers /status from a copy up to 10 s old (more on a busy
    // host; providers/interlink/backend.ts readMany), after the job has made its calls.
    await kubectl(["wait", "--for=condition=Ready", "pod/job", "--timeout=120s"]).catch(
      async (err) => {
        throw new Error(`${err}\n${await diagnose("job", on)}`, { cause: err });
      },
    );
    const podIp = (await kubectl(["get", "pod", "job", "-o", "jsonpath={.status.podIP}"])).trim();

    await t.step("the job's pod IP is on host 2's pod network", () => {
      const prefix = n2.host.podCidr.replace(/0\/24$/, "");
      assert.ok(podIp.startsWith(prefix), `pod IP ${podIp} is not in ${n2.host.podCidr}`);
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
        }, {
          timeoutMs: 30_000,
          detail: async () => {
            const direct = await getFromPod(client, `http://${podIp}:${ports.job}/`);
            const slices = await kubectl(["get", "endpointslices", "-o", "wide"]);
            return `${last}\ndirect: ${direct.stdout} ${
              direct.stderr.split("\n").at(-1)
            }\n${slices}\n${await diagnose("job", on)}`;
          },
        });
        assert.equal(answer, "hello from the job");
      },
    );

    await t.step("the job calls a Service by name and by env var from its pod IP", async () => {
      const detail = await diagnose("job", on);
      assert.equal(await read("job", "by-name.txt"), `echo ${podIp}`, detail);
      assert.equal(await read("job", "by-env.txt"), `echo ${podIp}`, detail);
      assert.match(await read("job", "done"), /^127\.\d+\.\d+\.\d+$/, "the agent's address");
    });

    await t.step(
      "a pod on the job's own host, and the job itself, reach it through its Service",
      async () => {
        const url = `http://job.${ns}.svc.cluster.local:8080/`;
        const res = await getFromPod(near, url);
        assert.equal(res.stdout, "hello from the job", `from host 2: ${res.stderr}`);
        const self = await waitUntil(
          "the job's call to its own Service",
          async () => (await read("job", "self.txt")).includes("hello") && read("job", "self.txt"),
          { timeoutMs: 60_000, detail: async () => `${await read("job", "self.txt")}` },
        ).catch((err) => err.message);
        assert.equal(self, "hello from the job", "the job through its own Service (hairpin)");
      },
    );

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
}
