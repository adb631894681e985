/**
 * The glue RemotePodsProvider took over from the remote providers (issue 62 items 5 and 6): the
 * setup's `closeClient` runs once close has stopped the pods' loop (slurm and interlink closed
 * their API clients by hand after `super.close()`), and `backendLogs` answers a container's log
 * from the backend's `logs` with the pod's runs, an init container's too, and refuses a container
 * the pod does not have.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type ContainerLogOptions,
  type ContainerRef,
  isNotFound,
  type Provider,
  type ProviderDeps,
  type RemoteBackend,
  type RemoteLogRuns,
  RemotePodsProvider,
  type RemoteRun,
} from "../../provider/mod.ts";
import { getLogger } from "../../base/log.ts";
import { realClock } from "../../base/clock.ts";

/** One run per pod uid, every container running; logs say whose they are. */
class LoggingRuns implements RemoteBackend {
  readonly runs = new Map<string, Pod>();
  listed = 0;
  list(): Promise<RemoteRun[]> {
    this.listed++;
    return Promise.resolve([...this.runs.values()].map((pod) => this.#run(pod)));
  }
  read(pod: Pod): Promise<RemoteRun | undefined> {
    const run = this.runs.get(pod.metadata!.uid!);
    return Promise.resolve(run && this.#run(run));
  }
  make(pod: Pod): Promise<void> {
    const { status: _, ...spec } = structuredClone(pod);
    this.runs.set(pod.metadata!.uid!, spec);
    return Promise.resolve();
  }
  remove(pod: Pod): Promise<void> {
    this.runs.delete(pod.metadata!.uid!);
    return Promise.resolve();
  }
  logs(
    pod: Pod,
    container: string,
    _options: ContainerLogOptions,
    runs: RemoteLogRuns,
  ): Promise<ReadableStream<Uint8Array>> {
    const text = `${pod.metadata!.name}/${container} current=${runs.current !== undefined}`;
    return Promise.resolve(ReadableStream.from([new TextEncoder().encode(text)]));
  }
  #run(pod: Pod): RemoteRun {
    const state = { running: { startedAtMs: 1_000 } };
    const all = [...pod.spec!.initContainers ?? [], ...pod.spec!.containers];
    return { pod, containers: Object.fromEntries(all.map((c) => [c.name, { state }])) };
  }
}

class GlueProvider extends RemotePodsProvider<unknown, LoggingRuns> implements Provider {
  constructor(deps: ProviderDeps, runs: LoggingRuns, readonly closed: string[]) {
    super(deps, () => ({
      backend: runs,
      intervalMs: 20,
      closeClient: () => void closed.push(`client closed after ${runs.listed} lists`),
    }));
  }
  getContainerLogs(ref: ContainerRef, options: ContainerLogOptions): Promise<ReadableStream> {
    return this.backendLogs(ref, options);
  }
}

function deps(): ProviderDeps {
  return {
    nodeName: "vk-glue",
    log: getLogger(["vkubelet", "provider", "test"]),
    clock: realClock,
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal: new AbortController().signal,
  };
}

const pod: Pod = {
  metadata: { namespace: "default", name: "web", uid: crypto.randomUUID() },
  spec: {
    nodeName: "vk-glue",
    initContainers: [{ name: "setup", image: "busybox" }],
    containers: [{ name: "app", image: "busybox" }],
  },
};

Deno.test("close stops the pods' loop, then closes the backend's client, once", async () => {
  const closed: string[] = [];
  const runs = new LoggingRuns();
  const provider = new GlueProvider(deps(), runs, closed);
  await provider.listPods({});
  assert.deepEqual(closed, []);
  await provider.close();
  const listedAtClose = runs.listed;
  assert.equal(closed.length, 1);
  assert.equal(closed[0], `client closed after ${listedAtClose} lists`);
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(runs.listed, listedAtClose, "the pods' loop polled after the client closed");
});

Deno.test("backendLogs reads an init container's log and a regular one's from the backend", async () => {
  const provider = new GlueProvider(deps(), new LoggingRuns(), []);
  try {
    await provider.createPod(structuredClone(pod), {});
    for (const container of ["setup", "app"]) {
      const stream = await provider.getContainerLogs(
        { namespace: "default", pod: "web", container },
        {},
      );
      assert.equal(await new Response(stream).text(), `web/${container} current=true`);
    }
    await assert.rejects(
      provider.getContainerLogs({ namespace: "default", pod: "web", container: "nope" }, {}),
      (err) => isNotFound(err) && /has no container nope/.test(String(err)),
    );
    await assert.rejects(
      provider.getContainerLogs({ namespace: "default", pod: "gone", container: "app" }, {}),
      isNotFound,
    );
  } finally {
    await provider.close();
  }
});
