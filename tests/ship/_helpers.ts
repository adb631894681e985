/**
 * Helpers for the shipping tests: run any vkubelet command line (the bundle, `main.ts` under a
 * service account) as a process until its node is Ready, and a small workload to check it with.
 * @module
 */
import type { TestCluster } from "../../tools/cluster/harness.ts";
import { nodeReady } from "../../tools/cluster/vkubelet.ts";
import { eventually } from "../../tools/harness/wait.ts";

/** A vkubelet process started by {@link spawnVkubelet}. */
export interface SpawnedVkubelet {
  output(): string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number>;
  /** Sends a signal (SIGSTOP, SIGCONT) to the process. */
  kill(signal: Deno.Signal): void;
}

/** Options for {@link spawnVkubelet}. */
export interface SpawnOptions {
  cwd?: string;
  env?: Record<string, string>;
  /** Called every 100 ms while waiting for Ready (e.g. to approve a CSR); errors are ignored. */
  whileWaiting?: () => Promise<void>;
  timeoutMs?: number;
}

/** Runs `command args` and waits until it logged "vkubelet is ready" and its node is Ready. */
export async function spawnVkubelet(
  cluster: TestCluster,
  nodeName: string,
  command: string,
  args: string[],
  options: SpawnOptions = {},
): Promise<SpawnedVkubelet> {
  const child = new Deno.Command(command, {
    args,
    cwd: options.cwd,
    env: { NO_COLOR: "1", ...options.env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let output = "";
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) output += chunk;
  };
  const status = Promise.all([collect(child.stdout), collect(child.stderr)]).then(() =>
    child.status
  );
  let exited = false;
  status.then(() => exited = true);
  const spawned: SpawnedVkubelet = {
    output: () => output,
    kill: (signal) => child.kill(signal),
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch {
        // Already exited.
      }
      return (await status).code;
    },
  };
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  while (!output.includes("vkubelet is ready") || await nodeReady(cluster, nodeName) !== "True") {
    if (exited || Date.now() > deadline) {
      try {
        child.kill("SIGKILL");
      } catch {
        // Already exited.
      }
      await status;
      throw new Error(
        `vkubelet's node ${nodeName} was not Ready (${exited ? "it exited" : "timed out"}):\n` +
          output,
      );
    }
    await options.whileWaiting?.().catch(() => {});
    await new Promise((r) => setTimeout(r, 100));
  }
  return spawned;
}

/** A pod pinned to `nodeName` that prints a line and then stays up. */
export function greeterPod(namespace: string, nodeName: string, line: string): unknown {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "greeter", namespace },
    spec: {
      nodeName,
      tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
      terminationGracePeriodSeconds: 1,
      containers: [{
        name: "main",
        image: "busybox",
        command: ["sh", "-c", `echo ${line}; exec sleep 3600`],
      }],
    },
  };
}

/** Waits until the pod's phase is `phase`. */
export function podPhase(cluster: TestCluster, ns: string, name: string, phase: string) {
  return eventually(`pod ${ns}/${name} to be ${phase}`, async () => {
    const res = await cluster.kubectl([
      "-n",
      ns,
      "get",
      "pod",
      name,
      "-o",
      "jsonpath={.status.phase}",
    ]);
    return res.stdout === phase ? phase : undefined;
  });
}

/** Waits until `kubectl logs` of the pod contains `text`; returns the logs. */
export function podLogs(cluster: TestCluster, ns: string, name: string, text: string) {
  return eventually(`logs of ${ns}/${name} to contain ${text}`, async () => {
    const res = await cluster.kubectl(["-n", ns, "logs", name]);
    return res.code === 0 && res.stdout.includes(text) ? res.stdout : undefined;
  });
}
