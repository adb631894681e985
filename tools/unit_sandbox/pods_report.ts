/**
 * Starts the process provider in this process, runs two pods of the same uid (a victim with a
 * secret in its environment, and one that looks for it through /proc), execs into the second,
 * and prints what happened as one JSON line: the node's conditions, each pod's container state
 * and log, and the exec's output. Run under `unit_sandbox` (./unit_sandbox.c) it shows what the
 * provider does under a systemd unit's restrictions (tests/providers/process/unit_sandbox_test.ts).
 *
 *   deno run -A tools/unit_sandbox/pods_report.ts ['{"mountNamespace":"auto"}']
 * @module
 */
import type { Node, Pod } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "@logtape/logtape";
import { realClock } from "../../base/clock.ts";
import { createProvider, type ProcessProvider } from "../../providers/process/mod.ts";

/** What one pod's container did. */
export interface PodReport {
  waiting?: { reason?: string; message?: string };
  running: boolean;
  log: string;
}

/** The JSON line this script prints. */
export interface UnitReport {
  /** Set if the provider refused to start; nothing else is then. */
  startError?: string;
  nodeConditions: NonNullable<Node["status"]>["conditions"];
  victim: PodReport;
  prying: PodReport;
  exec?: { code: number; out: string };
}

const SECRET = `secret-${crypto.randomUUID()}`;

/** Scans every /proc entry for the victim's secret; its shell's PID and the count of processes. */
function pryScript(): string {
  // Built from halves, so that the scan does not find itself.
  const [a, b] = [SECRET.slice(0, 6), SECRET.slice(6)];
  return [
    `s='${a}'; s="\${s}${b}"`,
    `for p in /proc/[0-9]*; do`,
    `  if tr '\\0' '\\n' 2>/dev/null < "$p/environ" | grep -q "$s"; then echo "environ of $p"; fi`,
    `done`,
    // `$$` is Kubernetes' escape for `$` in a command: the shell gets `$$`.
    `echo "shell pid $$$$"`,
    `echo "scanned $(ls -d /proc/[0-9]* | wc -l) processes"`,
    `sleep 60`,
  ].join("\n");
}

function pod(name: string, command: string, env: Record<string, string> = {}): Pod {
  return {
    metadata: { namespace: "default", name, uid: crypto.randomUUID() },
    spec: {
      nodeName: "vk-unit",
      terminationGracePeriodSeconds: 1,
      securityContext: { runAsUser: 54321, runAsGroup: 54321 },
      containers: [{
        name: "c",
        image: "x",
        command: ["sh", "-c", command],
        env: Object.entries(env).map(([name, value]) => ({ name, value })),
      }],
    },
  };
}

async function report(provider: ProcessProvider, p: Pod): Promise<PodReport> {
  const name = p.metadata!.name!;
  const status = await provider.getPodStatus("default", name, {});
  const state = status?.containerStatuses?.[0]?.state;
  let log = "";
  try {
    const stream = await provider.getContainerLogs(
      { namespace: "default", pod: name, container: "c" },
      {},
    );
    log = await new Response(stream).text();
  } catch {
    // no log: the container never started
  }
  return { waiting: state?.waiting, running: state?.running !== undefined, log };
}

/** Polls until `done` holds or `ms` pass. */
async function until(done: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline && !(await done())) await new Promise((r) => setTimeout(r, 50));
}

async function main(): Promise<UnitReport> {
  const config = JSON.parse(Deno.args[0] ?? "{}");
  const stateDir = await Deno.makeTempDir({ prefix: "vk-unit-" });
  const shutdown = new AbortController();
  const deps = {
    nodeName: "vk-unit",
    log: getLogger(["vkubelet", "provider", "unit-sandbox"]),
    clock: realClock,
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal: shutdown.signal,
  };
  let provider: ProcessProvider;
  try {
    provider = await createProvider({ stateDir, cgroups: "off", ...config }, deps);
  } catch (err) {
    await Deno.remove(stateDir, { recursive: true });
    const empty = { running: false, log: "" };
    return { startError: String(err), nodeConditions: [], victim: empty, prying: empty };
  }
  const node: Node = { metadata: { name: "vk-unit" } };
  provider.configureNode(node);
  const victim = pod("victim", "echo ready; sleep 60", { SECRET });
  const prying = pod("prying", pryScript());
  try {
    await provider.createPod(victim, {});
    await until(async () => {
      const r = await report(provider, victim);
      return r.log.includes("ready") || r.waiting?.reason !== undefined &&
          r.waiting.reason !== "ContainerCreating";
    }, 15_000);
    await provider.createPod(prying, {});
    await until(async () => {
      const r = await report(provider, prying);
      return r.log.includes("scanned") || r.waiting?.reason !== undefined &&
          r.waiting.reason !== "ContainerCreating";
    }, 15_000);
    const out: UnitReport = {
      nodeConditions: node.status?.conditions ?? [],
      victim: await report(provider, victim),
      prying: await report(provider, prying),
    };
    if (out.prying.running) out.exec = await execInto(provider);
    return out;
  } finally {
    for (const p of [prying, victim]) {
      const gone = { ...p, metadata: { ...p.metadata, deletionGracePeriodSeconds: 0 } };
      await provider.deletePod(gone, {}).catch(() => {});
    }
    shutdown.abort();
    await provider.close();
    await Deno.remove(stateDir, { recursive: true }).catch(() => {});
  }
}

/** `kubectl exec` into the prying pod: what PID 1 is and how many processes it sees. */
async function execInto(provider: ProcessProvider): Promise<{ code: number; out: string }> {
  let out = "";
  const decoder = new TextDecoder();
  const sink = () =>
    new WritableStream<Uint8Array>({
      write: (c) => void (out += decoder.decode(c, { stream: true })),
    });
  const code = await provider.runInContainer({
    namespace: "default",
    pod: "prying",
    container: "c",
  }, {
    command: ["sh", "-c", "tr '\\0' ' ' < /proc/1/cmdline; echo; ls -d /proc/[0-9]* | wc -l"],
    io: { tty: false, stdout: sink(), stderr: sink() },
  });
  return { code, out };
}

await Deno.stdout.write(new TextEncoder().encode(JSON.stringify(await main()) + "\n"));
