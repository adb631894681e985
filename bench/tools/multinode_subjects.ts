/**
 * The subjects of the many-nodes scenario (`bench/scenarios/multinode.ts`), each one process whose pid is
 * measured: vkubelet serving every node from one process (`--nodes`, mock provider, the full
 * kubelet API on one port), or KWOK managing the same number of annotated Nodes.
 * @module
 */
import type { KubeletIdentity } from "./control_plane.ts";
import { type Kube, pool } from "./kube.ts";
import { inspectFlags, shippedFlags } from "./subjects.ts";
import { ensureKwok, kwokArgs, kwokNode, writeKwokStages } from "./kwok.ts";
import { freePort } from "../../tools/cluster/ports.ts";

/** Which implementation runs the nodes. */
export type MultiNodeSubject = "vkubelet" | "kwok";
/** Every subject, in run order. */
export const MULTI_NODE_SUBJECTS: readonly MultiNodeSubject[] = ["vkubelet", "kwok"];

/** Capacity of every node, for the mock and for KWOK's Nodes. */
export const NODE_CAPACITY = { cpu: "1000", memory: "4Ti", pods: "20000" };

/** What starting a subject needs. */
export interface MultiNodeSpec {
  subject: MultiNodeSubject;
  names: string[];
  identity: KubeletIdentity;
  /** Creates KWOK's Nodes (vkubelet registers its own). */
  admin: Kube;
  workDir: string;
  qps: number;
  concurrency: number;
  progress: (line: string) => void;
}

/** A started subject. */
export interface StartedSubject {
  pid: number;
  /** performance.now() when the nodes were asked for (process start, or the first Node create). */
  startedAt: number;
  stop(): Promise<void>;
}

const repoRoot = new URL("../../", import.meta.url).pathname;

/** Starts `spec.subject`; KWOK's Nodes are created before this resolves. */
export async function startMultiNodeSubject(spec: MultiNodeSpec): Promise<StartedSubject> {
  const { workDir } = spec;
  await Deno.mkdir(workDir, { recursive: true });
  let command: [string, string[]];
  if (spec.subject === "vkubelet") {
    await Deno.writeTextFile(
      `${workDir}/mock.json`,
      JSON.stringify({ capacity: NODE_CAPACITY }),
    );
    await Deno.writeTextFile(
      `${workDir}/vk.json`,
      JSON.stringify({
        provider: "mock",
        providerConfig: `${workDir}/mock.json`,
        kubeconfig: spec.identity.kubeconfig,
        clientCaFile: spec.identity.ca,
        tlsSelfSigned: true,
        port: freePort(),
        logLevel: "warn",
        kubeApiQps: spec.qps,
        kubeApiBurst: spec.qps * 2,
        nodes: spec.names,
      }),
    );
    command = [Deno.execPath(), [
      "run",
      ...shippedFlags(),
      ...inspectFlags(),
      `${repoRoot}main.ts`,
      `--config=${workDir}/vk.json`,
    ]];
  } else {
    await writeKwokStages(`${workDir}/kwok.yaml`);
    command = [
      await ensureKwok(spec.progress),
      kwokArgs(spec.identity.kubeconfig, `${workDir}/kwok.yaml`),
    ];
  }
  const startedAt = performance.now();
  const child = new Deno.Command(command[0], {
    args: command[1],
    cwd: repoRoot,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const logged = Promise.all([
    child.stdout.pipeTo(await logFile(`${workDir}/${spec.subject}.out`)),
    child.stderr.pipeTo(await logFile(`${workDir}/${spec.subject}.log`)),
  ]).catch(() => {});
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch {
      // Already gone.
    }
    await child.status;
    await logged;
  };
  if (spec.subject === "kwok") {
    await pool(spec.names, spec.concurrency, async (name) => {
      await spec.admin.request("POST", "/api/v1/nodes", { body: kwokNode(name, NODE_CAPACITY) });
    }).catch(async (err) => {
      await stop();
      throw err;
    });
  }
  return { pid: child.pid, startedAt, stop };
}

async function logFile(path: string): Promise<WritableStream<Uint8Array>> {
  return (await Deno.open(path, { create: true, write: true, truncate: true })).writable;
}
