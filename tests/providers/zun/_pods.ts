/** Helpers of the zun tests that run pods as plain Zun containers on the real stack. */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { getLogger } from "../../../base/log.ts";
import type { ContainerLogOptions } from "../../../provider/mod.ts";
import { createProvider, type ZunProvider } from "../../../providers/zun/mod.ts";

/** A provider of node `nodeName` on the stack; close it with the function returned. */
export function zunProvider(nodeName: string): { p: ZunProvider; close: () => Promise<void> } {
  const stop = new AbortController();
  const p = createProvider({ statusInterval: "1s" }, {
    nodeName,
    log: getLogger(["test"]),
    clock: realClock,
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal: stop.signal,
  });
  return {
    p,
    close: async () => {
      stop.abort();
      await p.close();
    },
  };
}

/** A one-container pod running `script` under `restartPolicy`. */
export function scriptPod(prefix: string, script: string, restartPolicy = "Never"): Pod {
  return {
    metadata: { namespace: "default", name: `${prefix}-${Date.now()}`, uid: crypto.randomUUID() },
    spec: {
      restartPolicy: restartPolicy as "Never",
      containers: [{
        name: "main",
        image: "localhost/busybox:latest",
        command: ["sh", "-c", script],
      }],
    },
  };
}

/** Waits (up to 120 s) until `test` holds for the pod as the provider reports it. */
export async function until(
  p: ZunProvider,
  pod: Pod,
  what: string,
  test: (pod: Pod | undefined) => boolean,
): Promise<Pod | undefined> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const now = await p.getPod(pod.metadata!.namespace!, pod.metadata!.name!, {});
    if (test(now)) return now;
    if (Date.now() > deadline) {
      throw new Error(`${what} not seen in 120 s: ${JSON.stringify(now?.status)}`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Deletes the pod and waits until its containers are gone. */
export async function deleted(p: ZunProvider, pod: Pod): Promise<void> {
  await p.deletePod(pod, {});
  await until(p, pod, "the pod's removal", (now) => now === undefined);
}

/** The pod's container `main`. */
export const refOf = (pod: Pod) => ({
  namespace: pod.metadata!.namespace!,
  pod: pod.metadata!.name!,
  container: "main",
});

/** The pod's log as text. */
export async function logs(p: ZunProvider, pod: Pod, o: ContainerLogOptions = {}) {
  return await new Response(await p.getContainerLogs(refOf(pod), o)).text();
}

/** Runs `command` in the pod: exit code and what it wrote. */
export async function exec(p: ZunProvider, pod: Pod, command: string[]) {
  let out = "";
  const stdout = new WritableStream<Uint8Array>({
    write: (chunk) => void (out += new TextDecoder().decode(chunk)),
  });
  const code = await p.runInContainer(refOf(pod), { command, io: { stdout, tty: false } });
  return { code, out };
}
