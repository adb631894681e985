/**
 * `deno task demo`: brings up the local control plane (built from Go modules on first use),
 * starts vkubelet as node `vk-demo`, runs a sample workload on it, prints what to try, and
 * stays up until Ctrl-C; then it removes everything it started.
 *
 * Options: `--provider mock|process` (default `process`: pods run as local processes),
 * `--exit` (stop after the workload is Running; for tests), `--cluster=NAME` (a separate local
 * cluster instead of the default one; for tests).
 *
 * Ctrl-C in a terminal signals the whole process group. vkubelet runs in a group of its own so
 * that it is still there to stop the pods while the demo deletes its namespace; only then is it
 * stopped. (The process provider leaves pods running when vkubelet stops, to re-adopt them.)
 * @module
 */
import { clusterPaths, down, readState, running, up } from "./tools/cluster/cluster.ts";
import { useCluster } from "./tools/cluster/harness.ts";
import { startVkubelet } from "./tools/cluster/vkubelet.ts";

const encoder = new TextEncoder();
const say = (line: string) => Deno.stdout.writeSync(encoder.encode(line + "\n"));
const NODE = "vk-demo";
const NS = "demo";

/** The sample workload: a Deployment that logs, serves HTTP on loopback and reads a ConfigMap. */
function workload(provider: string): unknown[] {
  const server = {
    name: "web",
    image: "python:3",
    command: ["sh", "-c"],
    args: [
      'echo "hello from $POD_NAME on $NODE_NAME"; ' +
      "python3 -m http.server 8080 --bind 127.0.0.1 & " +
      'while true; do echo "$(date -u +%T) $GREETING"; sleep 2; done',
    ],
    env: [
      { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
      { name: "NODE_NAME", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } },
      { name: "GREETING", valueFrom: { configMapKeyRef: { name: "greeting", key: "text" } } },
    ],
    ports: [{ containerPort: 8080 }],
  };
  const mockContainer = { name: "web", image: "nginx:1", env: server.env };
  return [
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "greeting", namespace: NS },
      data: { text: "vkubelet says hi" },
    },
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "hello", namespace: NS },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: "hello" } },
        template: {
          metadata: { labels: { app: "hello" } },
          spec: {
            nodeSelector: { "kubernetes.io/hostname": NODE },
            tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
            containers: [provider === "mock" ? mockContainer : server],
          },
        },
      },
    },
  ];
}

async function main(args: string[]): Promise<number> {
  const provider = args.includes("--provider=mock") || args.includes("mock") ? "mock" : "process";
  const name = args.find((a) => a.startsWith("--cluster="))?.slice("--cluster=".length);
  const paths = clusterPaths(name);
  const previous = readState(paths);
  const wasUp = previous !== undefined && Object.values(running(previous)).every(Boolean);
  say("starting the local control plane (etcd, kube-apiserver, controller-manager, scheduler)");
  await up({ paths, progress: (line) => say(`  ${line}`) });
  const cluster = await useCluster(paths.name);
  say(`starting vkubelet as node ${NODE} with the ${provider} provider`);
  const logFile = `${paths.dir}/logs/vkubelet-demo.log`;
  const options = {
    nodeName: NODE,
    provider,
    logFile,
    detached: true,
    // Pod directories where this user may write, next to the cluster's files.
    ...(provider === "process" ? { providerConfig: `stateDir: ${paths.dir}/demo-process\n` } : {}),
  };
  let vk = await startVkubelet(cluster, options);
  let exited = false;
  vk.status.then(() => exited = true);
  const kubectl = async (argv: string[], stdin?: string) => {
    const res = await cluster.kubectl(argv, { stdin });
    if (res.code !== 0) throw new Error(`kubectl ${argv.join(" ")}: ${res.stderr}`);
    return res.stdout;
  };
  let code = 0;
  // Listening from here on (and through the clean-up, below) leaves no moment in which a Ctrl-C
  // finds no listener and ends the demo with vkubelet and its pods still running.
  const signal = firstSignal();
  try {
    await kubectl(["create", "namespace", NS, "--dry-run=client", "-o", "yaml"]).then((ns) =>
      kubectl(["apply", "-f", "-"], ns)
    );
    await kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({ kind: "List", apiVersion: "v1", items: workload(provider) }),
    );
    say("waiting for the sample workload to run");
    await kubectl(["-n", NS, "rollout", "status", "deployment/hello", "--timeout=120s"]);
    say(await kubectl(["get", "nodes", "-o", "wide"]));
    say(await kubectl(["-n", NS, "get", "pods", "-o", "wide"]));
    say(`Try, in another terminal:

  export KUBECONFIG=${paths.adminKubeconfig}
  deno task kubectl -- get nodes
  deno task kubectl -- -n ${NS} logs -f deployment/hello
  deno task kubectl -- -n ${NS} exec -it deployment/hello -- sh
  deno task kubectl -- -n ${NS} port-forward deployment/hello 8080:8080   # then open http://127.0.0.1:8080

(\`deno\` is any Deno 2.9.6: \`npx -y deno@2.9.6\` works in its place.) vkubelet's log: ${logFile}
Press Ctrl-C to stop; everything the demo started is removed.`);
    if (!args.includes("--exit")) await signal.received;
  } catch (err) {
    say(`demo failed: ${err instanceof Error ? err.message : err}\nvkubelet's log: ${logFile}`);
    // What the workload and the node looked like, so that a failed start says why.
    for (const argv of [["get", "nodes", "-o", "wide"], ["-n", NS, "get", "pods", "-o", "wide"]]) {
      say((await cluster.kubectl(argv)).stdout);
    }
    const events = await cluster.kubectl(["-n", NS, "get", "events", "--sort-by=.lastTimestamp"]);
    say(events.stdout.split("\n").slice(-15).join("\n"));
    code = 1;
  } finally {
    say("cleaning up");
    // Another Ctrl-C must not cut the clean-up short and leave vkubelet or pods behind.
    const patience = () => say("still cleaning up; it stops by itself");
    for (const s of SIGNALS) Deno.addSignalListener(s, patience);
    signal.stopListening();
    try {
      // The pods stop when vkubelet sees their namespace go; it must be running for that.
      if (exited) vk = await startVkubelet(cluster, { ...options, like: vk });
      await cluster.kubectl(["delete", "namespace", NS, "--wait=true", "--timeout=60s"]);
      await vk.stop("SIGTERM");
      await cluster.kubectl(["delete", "node", NODE]);
      if (!wasUp) await down(paths);
    } finally {
      for (const s of SIGNALS) Deno.removeSignalListener(s, patience);
    }
  }
  return code;
}

// SIGHUP too: closing the terminal must clean up as Ctrl-C does, now that vkubelet is detached.
const SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/** Listens for Ctrl-C, SIGTERM and SIGHUP until told to stop; `received` resolves on the first. */
function firstSignal(): { received: Promise<void>; stopListening: () => void } {
  const { promise, resolve } = Promise.withResolvers<void>();
  let seen = false;
  const onSignal = () => {
    // During start-up the current step (a rollout waits up to 120 s) ends first.
    if (!seen) say("stopping: the demo cleans up once the current step ends");
    seen = true;
    resolve();
  };
  for (const s of SIGNALS) Deno.addSignalListener(s, onSignal);
  return {
    received: promise,
    stopListening: () => {
      for (const s of SIGNALS) Deno.removeSignalListener(s, onSignal);
    },
  };
}

if (import.meta.main) Deno.exit(await main(Deno.args));
