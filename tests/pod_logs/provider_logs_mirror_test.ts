/**
 * The kit's log mirror follows what a remote provider serves `kubectl logs` from, not only a
 * backend's `logs`: zun, aci and interlink answer logs from their own clients, and their pods'
 * logs never reached the pod log directory. A container whose logs the provider cannot serve
 * (a Zun capsule's) is asked once, not again every few seconds for as long as it runs.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type ContainerLogOptions,
  type ContainerRef,
  type Logger,
  NotSupportedError,
  PodLogDir,
  type Provider,
  type ProviderDeps,
  readContainerLog,
  type RemoteBackend,
  RemotePodsProvider,
  type RemoteRun,
} from "../../provider/mod.ts";
import { LogMirror } from "../../provider/log_mirror.ts";
import { realClock } from "../../base/clock.ts";
import { eventually } from "../../tools/harness/wait.ts";

const quiet: Logger = { debug() {}, info() {}, warn() {}, warning() {}, error() {} };

/** Runs every pod's containers at once and keeps no logs of its own. */
class Runs implements RemoteBackend {
  readonly runs = new Map<string, Pod>();
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
  #run(pod: Pod): RemoteRun {
    const state = { running: { startedAtMs: Date.now() - 1000 } };
    return {
      pod,
      containers: Object.fromEntries(pod.spec!.containers.map((c) => [c.name, { state }])),
    };
  }
}

/** Serves logs from a client of its own, as zun's provider does for plain containers. */
class OwnLogsProvider extends RemotePodsProvider<unknown, Runs> implements Provider {
  asked = 0;
  constructor(deps: ProviderDeps) {
    super(deps, () => ({ backend: new Runs(), intervalMs: 20 }));
  }
  getContainerLogs(ref: ContainerRef, o: ContainerLogOptions): Promise<ReadableStream> {
    this.asked++;
    const time = new Date(Date.now() - 500).toISOString();
    const lines = ["first", "second"].map((l) => `${time} ${ref.pod}/${ref.container} ${l}\n`);
    const since = o.sinceTime?.getTime() ?? 0;
    const text = Date.parse(time) >= since ? lines.join("") : "";
    return Promise.resolve(ReadableStream.from([new TextEncoder().encode(text)]));
  }
}

Deno.test("a provider's own logs (no backend logs) are mirrored into the pod log directory", async () => {
  const root = await Deno.makeTempDir({ prefix: "vk-own-logs-" });
  const stop = new AbortController();
  const podLogs = new PodLogDir({
    dir: `${root}/pods`,
    linkDir: `${root}/containers`,
    maxBytes: 1 << 20,
    maxFiles: 2,
    clock: realClock,
    nodeName: "vk-own",
    maxStreams: 10,
  });
  const provider = new OwnLogsProvider({
    nodeName: "vk-own",
    log: quiet,
    clock: realClock,
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal: stop.signal,
    podLogs,
  });
  const pod: Pod = {
    metadata: { namespace: "default", name: "web", uid: crypto.randomUUID() },
    spec: { nodeName: "vk-own", containers: [{ name: "app", image: "busybox" }] },
  };
  try {
    await provider.createPod(pod, {});
    const path = podLogs.logPath({
      namespace: "default",
      pod: "web",
      uid: pod.metadata!.uid!,
      container: "app",
      restartCount: 0,
    });
    const texts = async () =>
      (await readContainerLog(path).catch(() => [])).map((r) => new TextDecoder().decode(r.text));
    await eventually("the provider's lines in 0.log", async () => (await texts()).length === 2);
    assert.deepEqual(await texts(), ["web/app first", "web/app second"]);
    assert.ok(provider.asked >= 1);
  } finally {
    stop.abort();
    await provider.close?.();
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a container whose logs the provider cannot serve is asked once, and its file stays empty", async () => {
  const root = await Deno.makeTempDir({ prefix: "vk-no-logs-" });
  const dir = new PodLogDir({
    dir: `${root}/pods`,
    linkDir: `${root}/containers`,
    maxBytes: 1 << 20,
    maxFiles: 2,
    clock: realClock,
    nodeName: "n",
    maxStreams: 10,
  });
  let asked = 0;
  const mirror = new LogMirror({
    dir,
    logs: () => {
      asked++;
      return Promise.reject(new NotSupportedError("a capsule's containers have no logs in Zun"));
    },
    clock: realClock,
    log: quiet,
    retryMs: 20,
  });
  try {
    mirror.observe({
      metadata: { namespace: "ns", name: "capsule", uid: "u-1" },
      status: {
        containerStatuses: [{
          name: "app",
          image: "x",
          imageID: "",
          ready: true,
          restartCount: 0,
          state: { running: {} },
        }],
      },
    });
    await eventually("the first ask", () => asked >= 1);
    await new Promise((r) => setTimeout(r, 400)); // 20 retry intervals
    assert.equal(asked, 1, "asked again for logs the provider said it cannot serve");
    const path = dir.logPath({
      namespace: "ns",
      pod: "capsule",
      uid: "u-1",
      container: "app",
      restartCount: 0,
    });
    assert.deepEqual(await readContainerLog(path).catch(() => []), []);
  } finally {
    await mirror.close();
    await Deno.remove(root, { recursive: true });
  }
});
