/**
 * vkubelet (`--provider interlink`) side by side with interLink's own virtual kubelet
 * (`cmd/virtual-kubelet` of github.com/interlink-hq/interlink at the version
 * tools/harness/interlink/go.mod pins), each a node of the local control plane, in front of the
 * same interLink API server and the same reference plugin answering as the SLURM plugin does
 * (./_real_like.ts). The same manifests go to each node in turn (one at a time, so that neither
 * node's `/status` calls refresh the plugin's status copy for the other): a Deployment with an
 * init container that logs a line a second, a Pod whose container exits 3 after 2 s with
 * `restartPolicy: Always`, then a Deployment of 50 pods. It prints the table of
 * providers/interlink/README.md ("Side by side with interLink's virtual kubelet") and asserts
 * that vkubelet is at least as good in every row.
 *
 * Skipped unless interLink's virtual kubelet is built (a minute or two; not in `.ci/run`):
 *
 * ```sh
 * deno run -A tools/harness/interlink/build.ts --virtual-kubelet
 * VKUBELET_KEEP_CLUSTER=1 deno task test tests/providers/interlink/side_by_side_test.ts
 * ```
 */
import assert from "node:assert/strict";
import type { Event, Pod } from "kubernetes-types/core/v1.d.ts";
import { type TestCluster, useCluster } from "../../../tools/cluster/harness.ts";
import { nodeReady, startVkubelet } from "../../../tools/cluster/vkubelet.ts";
import { eventually } from "../../../tools/harness/wait.ts";
import {
  interlinkVirtualKubeletPath,
  startInterlinkServer,
  startInterlinkVirtualKubelet,
} from "../../../tools/harness/interlink/interlink.ts";
import { startPlugin, type TestPlugin } from "./_plugin.ts";

const REPLICAS = 50;
/**
 * `VKUBELET_SIDE_BY_SIDE_PLUGIN=plain`: the reference plugin as it is (fresh `/status` answers,
 * init containers reported), to tell the plugin's part in a row from the kubelet's.
 */
const PLAIN = Deno.env.get("VKUBELET_SIDE_BY_SIDE_PLUGIN") === "plain";
/** How long the crashing pod is watched. */
const CRASH_WATCH_MS = 100_000;
/** The bound on the 50-pod rollout and on its deletion. */
const ROLLOUT_MS = 300_000;

/** interLink's node labels and taint, as interlink_server_integration_test.ts gives vkubelet. */
const INTERLINK_NODE_FLAGS = [
  "--node-labels=virtual-node.interlink/type=virtual-kubelet," +
  "node.kubernetes.io/exclude-from-external-load-balancers=true",
  "--register-with-taints=virtual-node.interlink/no-schedule=true:NoSchedule",
  "--disable-taint",
];

// A ten-minute comparison, not a check of vkubelet alone: it runs when asked for.
const asked = Deno.env.get("VKUBELET_SIDE_BY_SIDE") === "1";
const vkBuilt = await Deno.stat(interlinkVirtualKubeletPath()).then(() => true, () => false);
if (asked && !vkBuilt) {
  console.log(
    `side_by_side_test.ts skipped: interLink's virtual kubelet is not built at ${interlinkVirtualKubeletPath()}; ` +
      "build it with `deno run -A tools/harness/interlink/build.ts --virtual-kubelet`",
  );
}

/** One node under comparison. */
interface Subject {
  label: string;
  nodeName: string;
  /** Its kubelet API port on 127.0.0.1. */
  port: number;
  stop(): Promise<void>;
}

/** What was seen of one subject, one field per row of the table. */
interface Findings {
  /** Samples (every 2 s for 100 s) with the node Ready and without a not-ready/unreachable taint. */
  nodeReady: string;
  /** The distinct (phase, Ready, main container state) seen for the Deployment's pod, in order. */
  webPhases: string[];
  /** Init container's status once the pod ran. */
  webInit: string;
  /** The crashing pod: phases, restart counts and when they rose (s after create). */
  crashPhases: string[];
  crashRestarts: number;
  crashRestartTimes: number[];
  crashWaiting: string[];
  logs: Record<string, string>;
  /** Event reasons by object (web pod, crash pod), other than the scheduler's. */
  events: Record<string, string[]>;
  /** HTTP status of `/containerLogs` asked without a client certificate. */
  anonymousLogs: string;
  /** s from apply until all 50 pods are phase Running, or undefined. */
  phaseRunningS?: number;
  /** s from apply until all 50 run on the plugin (a job, the main container running). */
  jobsRunningS?: number;
  /** At the bound: how many were phase Running and how many really running. */
  atBound: string;
  /** s from scale to 0 until no pod and no job is left, or undefined. */
  deletedS?: number;
}

Deno.test({
  name: "side by side: vkubelet and interLink's own virtual kubelet on the same server and plugin",
  ignore: !asked || !vkBuilt,
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const cluster = await useCluster();
  const plugin = await startPlugin({ realLike: !PLAIN });
  const server = await startInterlinkServer({ pluginUrl: plugin.url! });
  const results: Record<string, Findings> = {};
  try {
    const subjects: Array<[string, () => Promise<Subject>]> = [
      ["vkubelet", () => startOurs(cluster, server.url)],
      ["interLink VK", () => startTheirs(cluster, server.url)],
    ];
    for (const [label, start] of subjects) {
      await t.step(label, async () => {
        const subject = await start();
        const ns = await cluster.newNamespace("sbs");
        try {
          results[label] = await observe(cluster, plugin, subject, ns);
        } finally {
          await subject.stop();
          await cluster.kubectl(["delete", "node", subject.nodeName, "--wait=false"]);
          await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
        }
      });
    }
  } finally {
    await server.stop();
    await plugin.stop();
  }
  const ours = results["vkubelet"];
  const theirs = results["interLink VK"];
  if (!ours || !theirs) return;
  console.log(`\nplugin: ${PLAIN ? "plain" : "SLURM-like"}\n${table(ours, theirs)}\n`);

  // vkubelet at least as good, row by row.
  assert.equal(ours.webPhases[0]?.startsWith("Running"), false, "not Running before the job runs");
  assert.ok(
    ours.webPhases.at(-1)?.startsWith("Running, Ready, running"),
    ours.webPhases.join(" → "),
  );
  assert.ok(ours.crashRestarts >= 2, `the crashing container restarted: ${ours.crashRestarts}`);
  assert.ok(!ours.crashPhases.includes("Failed"), "restartPolicy Always never fails the pod");
  for (const option of ["tail", "since", "timestamps", "limit-bytes", "follow"]) {
    assert.ok(ours.logs[option].startsWith("yes"), `logs --${option}: ${ours.logs[option]}`);
  }
  assert.ok(ours.events.web.includes("Started"), `events: ${ours.events.web}`);
  assert.ok(ours.events.crash.includes("BackOff"), `events: ${ours.events.crash}`);
  assert.match(ours.anonymousLogs, /^40[13]/, "the kubelet API refuses anonymous log reads");
  assert.match(ours.nodeReady, /^(\d+) of \1$/, "vkubelet's node stays Ready");
  assert.ok(ours.jobsRunningS !== undefined, `vkubelet ran ${REPLICAS} pods: ${ours.atBound}`);
  assert.ok(ours.deletedS !== undefined, "vkubelet deleted every job");
});

/** vkubelet, as interlink_server_integration_test.ts starts it, with the provider's defaults. */
async function startOurs(cluster: TestCluster, url: string): Promise<Subject> {
  const nodeName = `sbs-vkubelet-${crypto.randomUUID().slice(0, 6)}`;
  const node = await startVkubelet(cluster, {
    nodeName,
    provider: "interlink",
    providerConfig: JSON.stringify({
      target: "interlink",
      url,
      capacity: { cpu: "64", memory: "256Gi", pods: "300" },
    }),
    args: INTERLINK_NODE_FLAGS,
  });
  return {
    label: "vkubelet",
    nodeName,
    port: node.port,
    stop: async () => void await node.stop(),
  };
}

/** interLink's virtual kubelet with the admin's kubeconfig (it lists pods cluster-wide). */
async function startTheirs(cluster: TestCluster, url: string): Promise<Subject> {
  const nodeName = `sbs-interlink-${crypto.randomUUID().slice(0, 6)}`;
  const vk = await startInterlinkVirtualKubelet({
    nodeName,
    serverUrl: url,
    kubeconfig: cluster.kubeconfigPath,
  });
  try {
    // Ready after its first ping, 30 s after start.
    await eventually(
      "interLink's node Ready",
      async () => await nodeReady(cluster, nodeName) === "True",
      120_000,
      1000,
    );
  } catch (err) {
    await vk.stop();
    throw err;
  }
  return { label: "interLink VK", nodeName, port: vk.port, stop: vk.stop };
}

async function observe(
  cluster: TestCluster,
  plugin: TestPlugin,
  subject: Subject,
  ns: string,
): Promise<Findings> {
  const kubectl = cluster.kubectlIn(ns);
  const pods = async (selector: string) => {
    const list = JSON.parse(await kubectl(["get", "pods", "-l", selector, "-o", "json"]));
    return (list.items as Pod[]).filter((p) => !p.metadata?.deletionTimestamp);
  };
  const jobs = async () => {
    const out = new Set<string>();
    for await (const e of Deno.readDir(`${plugin.state}/pods`)) if (e.isDirectory) out.add(e.name);
    return out;
  };
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  // The crashing pod and the Deployment, together.
  const created = performance.now();
  await kubectl(["apply", "-f", "-"], JSON.stringify(crashPod(subject.nodeName)));
  await kubectl(["apply", "-f", "-"], JSON.stringify(webDeployment(subject.nodeName)));

  const crashPhases: string[] = [];
  const crashWaiting: string[] = [];
  const crashRestartTimes: number[] = [];
  let crashRestarts = 0;
  let nodeSamples = 0;
  let nodeNotReady = 0;
  const watchCrash = (async () => {
    while (performance.now() - created < CRASH_WATCH_MS) {
      const node = await cluster.kubectl(["get", "node", subject.nodeName, "-o", "json"]);
      if (node.code === 0) {
        const n = JSON.parse(node.stdout);
        const ready = n.status?.conditions?.find((c: { type: string }) => c.type === "Ready");
        const tainted = (n.spec?.taints ?? []).some((x: { key: string }) =>
          x.key === "node.kubernetes.io/unreachable" || x.key === "node.kubernetes.io/not-ready"
        );
        nodeSamples++;
        if (ready?.status !== "True" || tainted) nodeNotReady++;
      }
      const [p] = await pods("app=crash").catch(() => []);
      const cs = p?.status?.containerStatuses?.[0];
      const phase = p?.status?.phase ?? "";
      if (phase && crashPhases.at(-1) !== phase) crashPhases.push(phase);
      const waiting = cs?.state?.waiting?.reason;
      if (waiting && !crashWaiting.includes(waiting)) crashWaiting.push(waiting);
      const restarts = cs?.restartCount ?? 0;
      if (restarts > crashRestarts) {
        crashRestarts = restarts;
        crashRestartTimes.push(Math.round((performance.now() - created) / 1000));
      }
      await sleep(2000);
    }
  })();

  const webPhases: string[] = [];
  const web = await eventually(
    "the Deployment's pod running",
    async () => {
      const [p] = await pods("app=web");
      if (!p) return false;
      const ready = p.status?.conditions?.find((c) => c.type === "Ready")?.status === "True";
      const state = Object.keys(p.status?.containerStatuses?.[0]?.state ?? {})[0] ?? "none";
      const seen = `${p.status?.phase}, ${ready ? "Ready" : "not Ready"}, ${state}`;
      if (webPhases.at(-1) !== seen) webPhases.push(seen);
      return state === "running" && p.status?.phase === "Running" && ready && p;
    },
    120_000,
    1000,
  );
  const webName = web.metadata!.name!;
  const init = web.status?.initContainerStatuses?.[0];
  const webInit = init
    ? `${Object.keys(init.state ?? {})[0]}${
      init.state?.terminated ? ` (${init.state.terminated.reason})` : ""
    }`
    : "not shown";

  // Logs, once the pod has written a few lines.
  const logs: Record<string, string> = {};
  const run = async (args: string[], ms = 15_000) => {
    const res = await cluster.kubectl(["-n", ns, "logs", ...args], {
      signal: AbortSignal.timeout(ms),
    });
    return res;
  };
  await eventually(
    "five log lines",
    async () => {
      const res = await run([webName, "-c", "main"]);
      return res.code === 0 && res.stdout.split("\n").filter(Boolean).length >= 5;
    },
    60_000,
    1000,
  ).catch(() => {});
  const all = await run([webName, "-c", "main"]);
  const total = all.stdout.split("\n").filter(Boolean).length;
  const lines = (s: string) => s.split("\n").filter(Boolean);
  const failed = (res: { code: number; stderr: string }) => {
    const said = res.stderr.trim().split("\n").pop() ?? "";
    const message = said.match(/"message":"((?:[^"\\]|\\.)*)"/)?.[1] ??
      said.replace(/^Error from server \(\w+\): (Internal error occurred: )?/, "");
    return `no: ${message.slice(0, 100)}`;
  };
  {
    const res = await run([webName, "-c", "main", "--tail=2"]);
    logs.tail = res.code !== 0
      ? failed(res)
      : lines(res.stdout).length === 2
      ? "yes"
      : `no: ${lines(res.stdout).length} lines of ${total}`;
  }
  {
    const res = await run([webName, "-c", "main", "--since=3s"]);
    const n = lines(res.stdout).length;
    logs.since = res.code !== 0 ? failed(res) : n > 0 && n <= 5 ? "yes" : `no: ${n} lines`;
  }
  {
    const res = await run([webName, "-c", "main", "--timestamps", "--tail=1"]);
    logs.timestamps = res.code !== 0
      ? failed(res)
      : /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z line \d+$/.test(res.stdout.trim())
      ? "yes"
      : `no: ${JSON.stringify(res.stdout.trim().slice(0, 40))}`;
  }
  {
    const res = await run([webName, "-c", "main", "--limit-bytes=6"]);
    logs["limit-bytes"] = res.code !== 0
      ? failed(res)
      : res.stdout.length <= 6
      ? "yes"
      : `no: ${res.stdout.length} bytes`;
  }
  {
    // A follow that keeps streaming for 8 s gets new lines; one that ends at once does not.
    const started = performance.now();
    const res = await run([webName, "-c", "main", "-f", "--tail=1"], 8000);
    const ms = performance.now() - started;
    const n = lines(res.stdout).length;
    logs.follow = ms >= 7000 && n >= 5
      ? `yes (${n} lines in 8 s)`
      : `no: ended after ${(ms / 1000).toFixed(1)} s with ${n} line(s)`;
  }

  await watchCrash;
  {
    const res = await run(["crash", "--previous"]);
    logs.previous = res.code === 0 && res.stdout.includes("started") ? "yes" : failed(res);
  }

  // Events, other than the scheduler's.
  const eventList = JSON.parse(await kubectl(["get", "events", "-o", "json"])).items as Event[];
  const events = { web: [] as string[], crash: [] as string[] };
  for (const e of eventList) {
    if (
      e.source?.component === "default-scheduler" || e.reportingComponent === "default-scheduler"
    ) {
      continue;
    }
    const name = e.involvedObject?.name ?? "";
    const key = name === webName ? "web" : name === "crash" ? "crash" : undefined;
    if (key && e.reason && !events[key].includes(e.reason)) events[key].push(e.reason);
  }

  // The kubelet API without a client certificate.
  const curl = await new Deno.Command("curl", {
    args: [
      "-sk",
      "-o",
      "/dev/null",
      "-w",
      "%{http_code}",
      "--max-time",
      "10",
      `https://127.0.0.1:${subject.port}/containerLogs/${ns}/${webName}/main`,
    ],
    stdout: "piped",
    stderr: "null",
  }).output();
  const code = new TextDecoder().decode(curl.stdout).trim();
  const anonymousLogs = code === "200" ? "200 (the log is served)" : code;

  await kubectl(["delete", "pod", "crash", "--wait=false"]);
  await kubectl(["delete", "deployment", "web", "--wait=false"]);
  await eventually(
    "the first pods gone",
    async () => (await pods("app in (web,crash)")).length === 0,
    120_000,
    2000,
  )
    .catch(() => {});

  // 50 pods: time to phase Running, and to running on the plugin.
  const start = performance.now();
  await kubectl(["apply", "-f", "-"], JSON.stringify(bulkDeployment(subject.nodeName)));
  let phaseRunningS: number | undefined;
  let jobsRunningS: number | undefined;
  let atBound = "";
  while (performance.now() - start < ROLLOUT_MS) {
    const list = await pods("app=bulk").catch(() => [] as Pod[]);
    const onPlugin = await jobs();
    const phase = list.filter((p) => p.status?.phase === "Running").length;
    const real = list.filter((p) =>
      onPlugin.has(p.metadata!.uid!) && p.status?.containerStatuses?.[0]?.state?.running
    ).length;
    const s = Math.round((performance.now() - start) / 100) / 10;
    if (phase === REPLICAS && phaseRunningS === undefined) {
      phaseRunningS = s;
    }
    if (real === REPLICAS && jobsRunningS === undefined) {
      jobsRunningS = s;
    }
    atBound = `${phase} phase Running, ${real} running on the plugin after ${s} s`;
    if (phaseRunningS !== undefined && jobsRunningS !== undefined) {
      break;
    }
    await sleep(1000);
  }

  const removing = performance.now();
  await kubectl(["scale", "deployment/bulk", "--replicas=0"]);
  let deletedS: number | undefined;
  const bulkUids = new Set<string>();
  for (const p of await pods("app=bulk").catch(() => [] as Pod[])) bulkUids.add(p.metadata!.uid!);
  while (performance.now() - removing < ROLLOUT_MS) {
    const left = (await pods("app=bulk").catch(() => [{}] as Pod[])).length;
    const onPlugin = [...await jobs()].filter((uid) => bulkUids.has(uid)).length;
    if (left === 0 && onPlugin === 0) {
      deletedS = Math.round((performance.now() - removing) / 100) / 10;
      break;
    }
    await sleep(1000);
  }

  return {
    nodeReady: `${nodeSamples - nodeNotReady} of ${nodeSamples}`,
    webPhases,
    webInit,
    crashPhases,
    crashRestarts,
    crashRestartTimes,
    crashWaiting,
    logs,
    events,
    anonymousLogs,
    phaseRunningS,
    jobsRunningS,
    atBound,
    deletedS,
  };
}

/** The rows of providers/interlink/README.md's comparison. */
function table(ours: Findings, theirs: Findings): string {
  const secs = (s: number | undefined, f: Findings) =>
    s === undefined ? `not within ${ROLLOUT_MS / 1000} s (${f.atBound})` : `${s} s`;
  const rows: Array<[string, (f: Findings) => string]> = [
    [
      "node Ready, no `unreachable`/`not-ready` taint (samples, every 2 s)",
      (f) => f.nodeReady,
    ],
    [
      "Deployment pod: phase, Ready, main container (in order seen)",
      (f) => f.webPhases.join(" → "),
    ],
    ["its init container", (f) => f.webInit],
    ["crashing container (`restartPolicy: Always`): phases", (f) => f.crashPhases.join(" → ")],
    [
      `restarts in ${CRASH_WATCH_MS / 1000} s (s after create)`,
      (f) =>
        `${f.crashRestarts}${
          f.crashRestartTimes.length ? ` (${f.crashRestartTimes.join(", ")})` : ""
        }`,
    ],
    ["waiting reasons seen", (f) => f.crashWaiting.join(", ") || "none"],
    ...["tail", "since", "timestamps", "limit-bytes", "follow", "previous"].map((o) =>
      [`\`logs --${o}\``, (f: Findings) => f.logs[o]] as [string, (f: Findings) => string]
    ),
    ["events (Deployment pod)", (f) => f.events.web.join(", ") || "none"],
    ["events (crashing pod)", (f) => f.events.crash.join(", ") || "none"],
    ["kubelet API `/containerLogs` without a client certificate", (f) => f.anonymousLogs],
    [`${REPLICAS} pods: all phase Running`, (f) => secs(f.phaseRunningS, f)],
    [`${REPLICAS} pods: all running on the plugin`, (f) => secs(f.jobsRunningS, f)],
    [`scale to 0: no pod and no job left`, (f) => secs(f.deletedS, f)],
  ];
  return [
    "| | vkubelet | interLink VK |",
    "| --- | --- | --- |",
    ...rows.map(([name, get]) => `| ${name} | ${get(ours)} | ${get(theirs)} |`),
  ].join("\n");
}

const placement = (nodeName: string) => ({
  nodeSelector: { "kubernetes.io/hostname": nodeName },
  tolerations: [{ key: "virtual-node.interlink/no-schedule", operator: "Exists" }],
  terminationGracePeriodSeconds: 2,
});

/** A Deployment with an init container whose main container logs `line N` every second. */
function webDeployment(nodeName: string) {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web" },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: "web" } },
      template: {
        metadata: { labels: { app: "web" } },
        spec: {
          ...placement(nodeName),
          initContainers: [{ name: "setup", image: "busybox", command: ["true"] }],
          containers: [{
            name: "main",
            image: "busybox",
            command: [
              "/bin/sh",
              "-c",
              'i=0; while :; do echo "line $i"; i=$((i+1)); sleep 1; done',
            ],
          }],
        },
      },
    },
  };
}

/** A pod whose container exits 3 after 2 s, with `restartPolicy: Always`. */
function crashPod(nodeName: string) {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "crash", labels: { app: "crash" } },
    spec: {
      ...placement(nodeName),
      restartPolicy: "Always",
      containers: [{
        name: "main",
        image: "busybox",
        command: ["/bin/sh", "-c", "echo started; sleep 2; exit 3"],
      }],
    },
  };
}

/** 50 pods with an init container. */
function bulkDeployment(nodeName: string) {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "bulk" },
    spec: {
      replicas: REPLICAS,
      selector: { matchLabels: { app: "bulk" } },
      template: {
        metadata: { labels: { app: "bulk" } },
        spec: {
          ...placement(nodeName),
          initContainers: [{ name: "setup", image: "busybox", command: ["true"] }],
          containers: [{
            name: "main",
            image: "busybox",
            command: ["/bin/sh", "-c", "exec sleep 3600"],
          }],
        },
      },
    },
  };
}
