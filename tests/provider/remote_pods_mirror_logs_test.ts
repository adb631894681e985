/**
 * A backend's `mirrorLogs` (a batched or budgeted read for the node's log mirror) is what the
 * mirror follows, while `kubectl logs` keeps reading the backend's `logs`; `mirrorLogs: false`
 * still turns the mirror off.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type ContainerLogOptions,
  type Logger,
  PodLogDir,
  readContainerLog,
  type RemoteBackend,
  RemotePods,
  type RemoteRun,
} from "../../provider/mod.ts";
import { realClock } from "../../base/clock.ts";
import { eventually } from "../../tools/harness/wait.ts";

const quiet: Logger = { debug() {}, info() {}, warn() {}, warning() {}, error() {} };

/** One running run per pod; two log reads that say which one answered. */
class TwoLogs implements RemoteBackend {
  readonly runs = new Map<string, Pod>();
  readonly asked = { logs: 0, mirrorLogs: 0 };
  list(): Promise<RemoteRun[]> {
    return Promise.resolve([...this.runs.values()].map((pod) => this.#run(pod)));
  }
  read(pod: Pod): Promise<RemoteRun | undefined> {
    const run = this.runs.get(pod.metadata!.uid!);
    return Promise.resolve(run && this.#run(run));
  }
  make(pod: Pod): Promise<void> {
    this.runs.set(pod.metadata!.uid!, structuredClone(pod));
    return Promise.resolve();
  }
  remove(pod: Pod): Promise<void> {
    this.runs.delete(pod.metadata!.uid!);
    return Promise.resolve();
  }
  logs(_pod: Pod, container: string, o: ContainerLogOptions): Promise<ReadableStream> {
    this.asked.logs++;
    return Promise.resolve(lines(`${container} via logs`, o));
  }
  mirrorLogs(_pod: Pod, container: string, o: ContainerLogOptions): Promise<ReadableStream> {
    this.asked.mirrorLogs++;
    return Promise.resolve(lines(`${container} via mirrorLogs`, o));
  }
  #run(pod: Pod): RemoteRun {
    const state = { running: { startedAtMs: Date.now() - 1000 } };
    return { pod, containers: { app: { state } } };
  }
}

const WRITTEN = new Date(Date.now() - 500).toISOString();

/** One line stamped {@link WRITTEN}, none when asked from after it. */
function lines(text: string, o: ContainerLogOptions): ReadableStream<Uint8Array> {
  const after = (o.sinceTime?.getTime() ?? 0) > Date.parse(WRITTEN);
  const body = after ? "" : `${o.timestamps ? `${WRITTEN} ` : ""}${text}\n`;
  return ReadableStream.from([new TextEncoder().encode(body)]);
}

async function withPods(
  mirrorLogs: false | undefined,
  body: (pods: RemotePods, backend: TwoLogs, texts: () => Promise<string[]>) => Promise<void>,
): Promise<void> {
  const root = await Deno.makeTempDir({ prefix: "vk-mirror-hook-" });
  const dir = new PodLogDir({
    dir: `${root}/pods`,
    linkDir: `${root}/containers`,
    maxBytes: 1 << 20,
    maxFiles: 2,
    clock: realClock,
    nodeName: "n",
    maxStreams: 10,
  });
  const backend = new TwoLogs();
  const pods = new RemotePods({
    backend,
    clock: realClock,
    log: quiet,
    intervalMs: 20,
    podLogs: dir,
    ...(mirrorLogs === false ? { mirrorLogs } : {}),
  });
  const stop = new AbortController();
  const running = pods.run(stop.signal);
  const uid = crypto.randomUUID();
  const path = dir.logPath({ namespace: "ns", pod: "web", uid, container: "app", restartCount: 0 });
  const texts = async () =>
    (await readContainerLog(path).catch(() => [])).map((r) => new TextDecoder().decode(r.text));
  try {
    await pods.createPod({
      metadata: { namespace: "ns", name: "web", uid },
      spec: { containers: [{ name: "app", image: "busybox" }] },
    }, {});
    await body(pods, backend, texts);
  } finally {
    stop.abort();
    await running;
    await Deno.remove(root, { recursive: true });
  }
}

Deno.test("the mirror follows a backend's mirrorLogs, kubectl logs its logs", async () => {
  await withPods(undefined, async (pods, backend, texts) => {
    await eventually("the mirrored line in 0.log", async () => (await texts()).length === 1);
    assert.deepEqual(await texts(), ["app via mirrorLogs"]);
    assert.equal(backend.asked.logs, 0);
    const shown = await new Response(
      await pods.getContainerLogs({ namespace: "ns", pod: "web", container: "app" }, {}),
    ).text();
    assert.equal(shown, "app via logs\n");
    assert.equal(backend.asked.logs, 1);
  });
});

Deno.test("mirrorLogs: false turns the mirror off also for a backend with mirrorLogs", async () => {
  await withPods(false, async (_pods, backend, texts) => {
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(backend.asked.mirrorLogs, 0);
    assert.deepEqual(await texts(), []);
  });
});
