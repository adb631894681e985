/**
 * The kit's one rule for lifecycle hooks on remote pods (provider/lifecycle_hooks.ts): a provider
 * that declares `refuse` fails a pod with a hook at create, naming it; `backend` hands the pod on
 * unchanged; `exec` runs postStart through the provider's exec once the container runs (again
 * after a restart, never again for a run taken over), preStop before the removal within the grace
 * period, and records the kubelet's FailedPostStartHook / FailedPreStopHook events. The
 * conformance suite's hooks rule passes each honest mode and fails a provider that says one thing
 * and does another.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type ContainerRef,
  type ExecOptions,
  type HookMode,
  isInvalidInput,
  type PodEventRecorder,
  type Provider,
  type ProviderDeps,
  type RemoteBackend,
  RemotePodsProvider,
  type RemoteRun,
} from "../../provider/mod.ts";
import { runProviderConformance } from "../../provider/testing/mod.ts";
import { getLogger } from "../../base/log.ts";
import { realClock } from "../../base/clock.ts";
import type { Clock } from "../../base/clock.ts";

/** Runs by pod uid; each container runs until removed, or exits with what `exits` says. */
class Runs implements RemoteBackend {
  readonly runs = new Map<string, { pod: Pod; node: string; restarts: number; exit?: number }>();
  readonly made: Pod[] = [];
  constructor(readonly node: string, readonly now: () => number) {}
  list() {
    return Promise.resolve(
      [...this.runs.values()].filter((r) => r.node === this.node).map((r) => this.#run(r)),
    );
  }
  read(pod: Pod) {
    const run = this.runs.get(pod.metadata!.uid!);
    return Promise.resolve(run && this.#run(run));
  }
  make(pod: Pod, _signal?: AbortSignal, options?: { restarts: number }) {
    this.made.push(structuredClone(pod));
    const { status: _, ...spec } = structuredClone(pod);
    this.runs.set(pod.metadata!.uid!, {
      pod: spec,
      node: this.node,
      restarts: options?.restarts ?? 0,
    });
    return Promise.resolve();
  }
  remove(pod: Pod) {
    this.runs.delete(pod.metadata!.uid!);
    return Promise.resolve();
  }
  #run(r: { pod: Pod; restarts: number; exit?: number }): RemoteRun {
    const state = r.exit === undefined
      ? { running: { startedAtMs: 1_000 * (r.restarts + 1) } }
      : { terminated: { exitCode: r.exit, finishedAtMs: this.now() } };
    const containers = Object.fromEntries(r.pod.spec!.containers.map((c) => [c.name, { state }]));
    return { pod: r.pod, containers, podIP: "127.0.0.2", restarts: r.restarts };
  }
}

/** What exec was asked, and how it answers. */
interface ExecLog {
  calls: string[];
  answer: (command: string[], signal?: AbortSignal) => Promise<number>;
}

class HookedProvider extends RemotePodsProvider<unknown, Runs> implements Provider {
  constructor(
    deps: ProviderDeps,
    runs: Runs,
    mode: HookMode | undefined,
    readonly execs?: ExecLog,
  ) {
    super(
      deps,
      () => ({ backend: runs, intervalMs: 20, hooks: mode, backoff: { initialMs: 10, maxMs: 10 } }),
    );
  }
  get runs(): Runs {
    return this.backend;
  }
  async runInContainer(ref: ContainerRef, options: ExecOptions): Promise<number> {
    this.known(ref);
    this.execs?.calls.push(`${ref.container}: ${options.command.join(" ")}`);
    return await (this.execs?.answer(options.command, options.signal) ?? Promise.resolve(0));
  }
}

function deps(
  clock: Clock = realClock,
  events?: PodEventRecorder,
): ProviderDeps & { stop: AbortController } {
  const stop = new AbortController();
  return {
    nodeName: "vk-hooks",
    log: getLogger(["vkubelet", "provider", "test"]),
    clock,
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal: stop.signal,
    events,
    stop,
  };
}

function hookedPod(name: string, grace = 1): Pod {
  return {
    metadata: { namespace: "default", name, uid: crypto.randomUUID() },
    spec: {
      nodeName: "vk-hooks",
      restartPolicy: "Always",
      terminationGracePeriodSeconds: grace,
      containers: [{
        name: "app",
        image: "busybox",
        lifecycle: {
          postStart: { exec: { command: ["touch", "/tmp/ready"] } },
          preStop: { exec: { command: ["sleep", "5"] } },
        },
      }],
    },
  };
}

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 3_000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function recorder(): PodEventRecorder & { seen: string[] } {
  const seen: string[] = [];
  return { seen, record: (_pod, e) => void seen.push(`${e.type} ${e.reason}: ${e.message}`) };
}

Deno.test("refuse: a pod with a postStart hook fails at create, naming the hook and the reason", async () => {
  const d = deps();
  const runs = new Runs(d.nodeName, () => 0);
  const provider = new HookedProvider(d, runs, undefined);
  try {
    const err = await provider.createPod(hookedPod("p"), {}).catch((e) => e);
    assert.ok(isInvalidInput(err), String(err));
    assert.match(
      err.message,
      /^spec\.containers\[app\]\.lifecycle\.postStart: this node's provider cannot run lifecycle hooks/,
    );
    assert.match(
      err.message,
      /remove the hook, or schedule the pod on a node whose provider runs hooks/,
    );
    assert.equal(runs.made.length, 0, "nothing was made on the backend");
  } finally {
    await provider.close();
  }
});

Deno.test("backend: the pod reaches the backend with its lifecycle, and vkubelet runs no hook", async () => {
  const d = deps();
  const runs = new Runs(d.nodeName, () => 0);
  const execs: ExecLog = { calls: [], answer: () => Promise.resolve(0) };
  const provider = new HookedProvider(d, runs, "backend", execs);
  try {
    const pod = hookedPod("p");
    await provider.createPod(pod, {});
    assert.deepEqual(runs.made[0].spec?.containers[0].lifecycle, pod.spec!.containers[0].lifecycle);
    await new Promise((r) => setTimeout(r, 100)); // a few polls
    await provider.deletePod(pod, {});
    assert.deepEqual(execs.calls, []);
  } finally {
    await provider.close();
  }
});

Deno.test("exec: postStart runs once the container runs and again after a restart; a failure is the kubelet's event", async () => {
  const events = recorder();
  const d = deps(realClock, events);
  const runs = new Runs(d.nodeName, () => 0);
  const execs: ExecLog = { calls: [], answer: () => Promise.resolve(2) };
  const provider = new HookedProvider(d, runs, "exec", execs);
  try {
    const pod = hookedPod("p");
    await provider.createPod(pod, {});
    await until(() => execs.calls.length === 1, "the postStart hook");
    assert.deepEqual(execs.calls, ["app: touch /tmp/ready"]);
    await until(() => events.seen.length === 1, "the event");
    assert.equal(
      events.seen[0],
      'Warning FailedPostStartHook: Exec lifecycle hook (["touch","/tmp/ready"]) for Container "app" in Pod "default/p" failed - error: command exited with 2, message: ""',
    );
    // The run ends and the kit makes the next one: its container gets the hook again.
    runs.runs.get(pod.metadata!.uid!)!.exit = 1;
    await until(() => execs.calls.length === 2, "the postStart hook of the restarted run");
  } finally {
    await provider.close();
  }
});

Deno.test("exec: a run taken over from an earlier vkubelet does not get its postStart again", async () => {
  const d1 = deps();
  const runs = new Runs("vk-hooks", () => 0);
  const execs: ExecLog = { calls: [], answer: () => Promise.resolve(0) };
  const first = new HookedProvider(d1, runs, "exec", execs);
  const pod = hookedPod("p");
  await first.createPod(pod, {});
  await until(() => execs.calls.length === 1, "the first postStart");
  await first.close();
  const d2 = deps();
  const second = new HookedProvider(d2, runs, "exec", execs);
  try {
    await second.createPod(pod, {}); // the core hands the pod over again
    await new Promise((r) => setTimeout(r, 150)); // several polls
    assert.deepEqual(execs.calls, ["app: touch /tmp/ready"]);
  } finally {
    await second.close();
  }
});

Deno.test("exec: preStop runs before the removal and is cut at the grace period", async () => {
  const events = recorder();
  const d = deps(realClock, events);
  const runs = new Runs(d.nodeName, () => 0);
  const execs: ExecLog = {
    calls: [],
    answer: (command, signal) =>
      command[0] === "sleep"
        ? new Promise((_, reject) => signal?.addEventListener("abort", () => reject(signal.reason)))
        : Promise.resolve(0),
  };
  const provider = new HookedProvider(d, runs, "exec", execs);
  try {
    const pod = hookedPod("p", 1);
    await provider.createPod(pod, {});
    await until(() => execs.calls.length === 1, "the postStart hook");
    const started = Date.now();
    await provider.deletePod({
      ...pod,
      metadata: { ...pod.metadata, deletionGracePeriodSeconds: 1 },
    }, {});
    const took = Date.now() - started;
    assert.ok(took >= 900 && took < 3_000, `deletePod took ${took} ms, not the 1 s grace period`);
    assert.deepEqual(execs.calls, ["app: touch /tmp/ready", "app: sleep 5"]);
    assert.deepEqual(events.seen, [
      'Warning FailedPreStopHook: PreStop hook for Container "app" in Pod "default/p" did not complete within the grace period',
    ]);
    await until(() => !runs.runs.has(pod.metadata!.uid!), "the removal after preStop");
  } finally {
    await provider.close();
  }
});

Deno.test("exec: an httpGet hook is refused at create, naming it", async () => {
  const d = deps();
  const provider = new HookedProvider(d, new Runs(d.nodeName, () => 0), "exec");
  try {
    const pod = hookedPod("p");
    pod.spec!.containers[0].lifecycle = { preStop: { httpGet: { port: 80 } } };
    const err = await provider.createPod(pod, {}).catch((e) => e);
    assert.ok(isInvalidInput(err));
    assert.match(
      err.message,
      /^spec\.containers\[app\]\.lifecycle\.preStop: an httpGet hook is not run/,
    );
  } finally {
    await provider.close();
  }
});

/** The conformance suite's outcome of the hooks rule for providers made by `create`. */
async function hooksRule(create: (deps: ProviderDeps) => Provider): Promise<string> {
  let outcome = "not run";
  const t = {
    step: async (step: { name: string; ignore?: boolean; fn: () => Promise<void> }) => {
      if (!step.name.startsWith("hooks:")) {
        return !step.ignore && await step.fn().then(() => true, () => false);
      }
      if (step.ignore) return (outcome = "ignored", false);
      return await step.fn().then(
        () => (outcome = "ok", true),
        (e) => (outcome = String(e.message), false),
      );
    },
  } as unknown as Deno.TestContext;
  await runProviderConformance(t, { create, inMemory: true, timeoutMs: 3_000 });
  return outcome;
}

Deno.test("the conformance hooks rule passes each mode kept as declared", async () => {
  const cloud = new Map<string, Runs>();
  const runsOf = (d: ProviderDeps) => {
    if (!cloud.has(d.nodeName)) cloud.set(d.nodeName, new Runs(d.nodeName, () => 0));
    return cloud.get(d.nodeName)!;
  };
  for (const mode of ["refuse", "backend", "exec"] as const) {
    const execs: ExecLog = { calls: [], answer: () => Promise.resolve(0) };
    assert.equal(await hooksRule((d) => new HookedProvider(d, runsOf(d), mode, execs)), "ok", mode);
  }
});

Deno.test("the conformance hooks rule fails a provider that declares exec and runs no hook", async () => {
  class Silent extends HookedProvider {
    override createPod(pod: Pod, options: { signal?: AbortSignal }) {
      return this.pods.createPod(pod, options); // past the kit's hook rule
    }
  }
  const outcome = await hooksRule((d) => new Silent(d, new Runs(d.nodeName, () => 0), "exec"));
  assert.match(outcome, /^\[hooks\] lifecycle hooks do what the provider declares/);
  assert.match(
    outcome,
    /refuses an httpGet hook .*createPod of a pod whose hook the provider cannot run succeeded/,
  );
});

Deno.test("the conformance hooks rule fails a provider that declares refuse and runs the pod without its hooks", async () => {
  class Silent extends HookedProvider {
    override createPod(pod: Pod, options: { signal?: AbortSignal }) {
      return this.pods.createPod(pod, options);
    }
  }
  const outcome = await hooksRule((d) => new Silent(d, new Runs(d.nodeName, () => 0), "refuse"));
  assert.match(
    outcome,
    /createPod of a pod whose hook the provider cannot run succeeded, not with an InvalidInputError/,
  );
});
