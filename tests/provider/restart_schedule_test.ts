/**
 * Every provider that restarts anything restarts a failing container on the kubelet's schedule —
 * at once, then 10 s doubling to 5 min — because each takes its decision from the kit
 * (provider/restart.ts). Each provider is driven through its own restart path (the mock's exit
 * hook, the process provider's start decision, the remote providers' status loops) with fakes of
 * their backend calls and a fake clock; a container that fails as soon as it starts shows the
 * waits between a failure and the restart after it.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "../../base/log.ts";
import { FakeClock } from "../fakes/clock.ts";
import { createProvider as createMock } from "../../providers/mock/mod.ts";
import { decideStart } from "../../providers/process/lifecycle/restart_policy.ts";
import type { ContainerRecord } from "../../providers/process/state/state.ts";
import { type RemoteBackend, RemotePods } from "../../provider/mod.ts";
import { FargateBackend } from "../../providers/fargate/backend.ts";
import { parseFargateConfig } from "../../providers/fargate/config.ts";
import { AciBackend } from "../../providers/aci/backend.ts";
import { parseAciConfig } from "../../providers/aci/config.ts";
import type { ContainerGroup as AciGroup } from "../../providers/aci/azure.ts";
import type { ContainerGroup as EciGroup } from "../../providers/eci/client/api.ts";
import { EciBackend } from "../../providers/eci/backend.ts";
import { parseEciConfig } from "../../providers/eci/config.ts";
import { InterlinkBackend } from "../../providers/interlink/backend.ts";
import { SlurmJobs } from "../../providers/slurm/backend.ts";
import type { JobInfo, SlurmClient } from "../../providers/slurm/client/slurm_client.ts";
import { parseSlurmConfig } from "../../providers/slurm/config.ts";

/** The waits between a failure and the restart after it, in seconds: the kubelet's. */
const KUBELET_SCHEDULE_S = [0, 10, 20, 40, 80, 160, 300, 300];
const ROLE = "arn:aws:iam::123456789012:role/exec";

/** One provider's restart path, driven from outside. */
interface Driver {
  clock: FakeClock;
  /** The running container (or the pod's whole run) fails now, and the provider looks. */
  fail(): Promise<void>;
  /** Time moves on by a second, and the provider looks again. */
  tick(): Promise<void>;
  /** Restarts so far. */
  restarts(): Promise<number>;
  close?(): Promise<void>;
}

const log = getLogger(["test"]);
const signal = new AbortController().signal;
const pod = (): Pod => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { namespace: "ns", name: "p", uid: "u1", annotations: {} },
  spec: { nodeName: "n1", containers: [{ name: "app", image: "img" }] },
});

/**
 * After the schedule, a run of 6 min still counts (the kubelet forgets a back-off only 10 min
 * after the last restart), a run of 11 min starts it over: [seconds run, then wait expected].
 */
const LONG_RUNS_S = [[360, 300], [660, 0]];

/** Fails the container again each time it is restarted; the seconds waited before each restart. */
async function schedule(driver: Driver, runsS: number[] = []): Promise<number[]> {
  const waits: number[] = [];
  for (let i = 0; i < KUBELET_SCHEDULE_S.length + runsS.length; i++) {
    for (let s = 0; s < (runsS[i - KUBELET_SCHEDULE_S.length] ?? 0); s++) await driver.tick();
    await driver.fail();
    let waited = 0;
    while (await driver.restarts() === i) {
      if (++waited > 400) throw new Error(`restart ${i + 1} did not come within 400 s`);
      await driver.tick();
    }
    waits.push(waited);
  }
  await driver.close?.();
  return waits;
}

function mock(): Driver {
  const clock = new FakeClock();
  const stop = new AbortController();
  const provider = createMock(undefined, {
    nodeName: "n1",
    log,
    clock,
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal: stop.signal,
  });
  const p = pod();
  p.metadata!.annotations!["mock.vkubelet.io/exit"] = "app=1"; // exits as soon as it starts
  const created = provider.createPod(p, { signal: stop.signal });
  return {
    clock,
    fail: async () => {
      await created;
      await clock.advance(0);
    },
    tick: () => clock.advance(1_000),
    restarts: async () =>
      (await provider.getPod("ns", "p", {}))?.status?.containerStatuses?.[0].restartCount ?? 0,
    close: async () => {
      stop.abort();
      await provider.close?.();
    },
  };
}

function processProvider(): Driver {
  const clock = new FakeClock();
  const p = pod();
  const c = p.spec!.containers[0];
  const cr: ContainerRecord = { name: "app", restartCount: 0, image: "img" };
  // What the pod runner does at each wake: decide, and start when told to.
  const look = () => {
    const decision = decideStart(p, c, cr, {
      restart: (t) => t.exitCode !== 0,
      nowMs: clock.now(),
    });
    if (decision.action === "start") cr.terminated = undefined;
  };
  return {
    clock,
    fail: () => {
      const now = clock.now();
      cr.terminated = {
        instance: cr.restartCount,
        exitCode: 1,
        reason: "Error",
        startedAtMs: now,
        finishedAtMs: now,
        containerId: `process://${cr.restartCount}`,
      };
      look();
      return Promise.resolve();
    },
    tick: () => {
      clock.jump(1_000);
      look();
      return Promise.resolve();
    },
    restarts: () => Promise.resolve(cr.restartCount),
  };
}

function fargate(): Driver {
  const clock = new FakeClock();
  const parsed = parseFargateConfig({
    region: "eu-west-1",
    subnets: ["subnet-0abc"],
    executionRoleArn: ROLE,
  });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  let runs = 0;
  let stopped = false;
  const backend = new FargateBackend({
    ecs: {
      describe: (arns: string[]) =>
        Promise.resolve(
          new Map(arns.map((arn) => [arn, {
            taskArn: arn,
            lastStatus: stopped ? "STOPPED" : "RUNNING",
            containers: stopped ? [{ name: "app", exitCode: 1 }] : [],
          }])),
        ),
      listStartedBy: () => Promise.resolve([]),
      stop: () => Promise.resolve(),
      run: () => {
        stopped = false;
        return Promise.resolve({
          taskArn: `arn:aws:ecs:r:1:task/c/t${runs++}`,
          lastStatus: "RUNNING",
        });
      },
      register: () => Promise.resolve("arn:aws:ecs:r:1:task-definition/p:1"),
      deregister: () => Promise.resolve(),
      ensureLogGroup: () => Promise.resolve(),
    },
    secrets: { put: () => Promise.resolve(""), remove: () => Promise.resolve() },
    config: parsed.config,
    nodeName: "n1",
    clock,
    event: () => {},
    signal,
  });
  const pods = new RemotePods({ backend, clock, log, intervalMs: 1_000 });
  const created = pods.createPod(pod(), { signal });
  return {
    clock,
    fail: async () => {
      await created;
      stopped = true;
      await pods.poll(signal);
    },
    tick: () => {
      clock.jump(1_000);
      return pods.poll(signal);
    },
    restarts: () => created.then(() => runs - 1),
  };
}

/**
 * A cloud provider on the kit (ACI, ECI): the backend restarts containers itself, so the kit
 * makes a group again only once it is gone; `fail` deletes the group behind vkubelet's back.
 */
function cloudGroups(
  clock: FakeClock,
  backend: RemoteBackend,
  deleteGroup: () => void,
  made: () => number,
): Driver {
  const pods = new RemotePods({ backend, clock, log, intervalMs: 1_000, backendRestarts: true });
  const created = pods.createPod(pod(), { signal });
  return {
    clock,
    fail: async () => {
      await created;
      deleteGroup();
      await pods.poll(signal);
    },
    tick: () => {
      clock.jump(1_000);
      return pods.poll(signal);
    },
    restarts: () => created.then(made),
  };
}

function aci(): Driver {
  const clock = new FakeClock();
  const parsed = parseAciConfig({
    subscriptionId: "00000000-0000-0000-0000-000000000000",
    resourceGroup: "rg",
    location: "westeurope",
  });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const group: AciGroup = {
    name: "g",
    osType: "Linux",
    containers: [{ name: "app", image: "img", resources: { requests: { cpu: 1, memoryInGB: 1 } } }],
  };
  let exists = false;
  let made = 0;
  const backend = new AciBackend({
    groups: {
      get: () => Promise.resolve(exists ? group : undefined),
      list: () => Promise.resolve([]),
      delete: () => Promise.resolve(),
      create: () => {
        exists = true;
        made++;
        return Promise.resolve(group);
      },
    },
    capacity: { groupLimits: () => ({ maxCpu: 4, maxMemoryInGB: 16 }) },
    config: parsed.config,
    nodeName: "n1",
    clock,
    log,
    event: () => {},
  });
  return cloudGroups(clock, backend, () => exists = false, () => made - 1);
}

function eci(): Driver {
  const clock = new FakeClock();
  const parsed = parseEciConfig({
    regionId: "cn-hangzhou",
    vSwitchId: "vsw-1",
    securityGroupId: "sg-1",
  });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  let exists = false;
  let made = 0;
  const backend = new EciBackend({
    api: {
      describe: (ids: string[]) =>
        Promise.resolve(
          new Map(exists ? ids.map((id) => [id, { containerGroupId: id } as EciGroup]) : []),
        ),
      listForNode: () => Promise.resolve([]),
      delete: () => Promise.resolve(),
      events: () => Promise.resolve(new Map()),
      log: () => Promise.resolve(""),
      create: () => {
        exists = true;
        return Promise.resolve(`eci-${made++}`);
      },
    },
    config: parsed.config,
    nodeName: "n1",
    hostIP: "127.0.0.1",
    clock,
    log,
    event: () => {},
    signal,
  });
  return cloudGroups(clock, backend, () => exists = false, () => made - 1);
}

function interlink(): Driver {
  const clock = new FakeClock();
  let failed = false;
  let jobs = 0;
  const backend = new InterlinkBackend({
    api: {
      // No job before the first /create: the pod is created, not adopted.
      status: (pods: Pod[]) =>
        Promise.resolve(
          pods.filter(() => jobs > 0).map((p) => ({
            name: p.metadata!.name!,
            namespace: p.metadata!.namespace!,
            UID: p.metadata!.uid!,
            JID: `job-${jobs}`,
            containers: [{
              name: "app",
              image: "img",
              imageID: "",
              ready: !failed,
              restartCount: 0,
              state: failed ? { terminated: { exitCode: 1 } } : { running: {} },
            }],
          })),
        ),
      create: () => {
        failed = false;
        return Promise.resolve(`job-${++jobs}`);
      },
      delete: () => Promise.resolve(),
    },
    config: {
      target: "plugin",
      statusCacheWindow: 30_000,
      createAttempts: 3,
      tokenExpirationSeconds: 3600,
    },
    nodeName: "n1",
    clock,
    log,
    event: () => {},
    hostIP: "127.0.0.1",
  });
  const pods = new RemotePods({ backend, clock, log, intervalMs: 1_000, pollBackoff: true });
  const created = pods.createPod(pod(), { signal });
  return {
    clock,
    fail: async () => {
      await created;
      failed = true;
      await pods.poll(signal);
    },
    tick: () => {
      clock.jump(1_000);
      return pods.poll(signal);
    },
    restarts: () => created.then(() => jobs - 1),
  };
}

function slurm(): Driver {
  const clock = new FakeClock();
  const sharedDir = Deno.makeTempDirSync();
  Deno.chmodSync(sharedDir, 0o711);
  // allowRootNamespaces: the test may run as root, with no fileOwner (jobs would be root's).
  const parsed = parseSlurmConfig({ sharedDir, cli: {}, allowRootNamespaces: ["ns"] });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  let jobs = 0;
  let state = "RUNNING";
  const job = (): JobInfo => ({
    id: jobs,
    state,
    reason: "None",
    comment: "",
    exitStatus: state === "FAILED" ? 256 : 0,
    startMs: clock.now(),
    endMs: 0,
  });
  const slurm = {
    kind: "fake",
    submit: () => {
      state = "RUNNING";
      return Promise.resolve(++jobs);
    },
    jobs: () => Promise.resolve(jobs ? [job()] : []),
    cancel: () => Promise.resolve(),
  } as unknown as SlurmClient;
  const { restartBackOff } = parsed.config;
  const pods = new RemotePods({
    backend: new SlurmJobs({
      slurm,
      config: parsed.config,
      nodeName: "n1",
      hostIP: "127.0.0.1",
      clock,
      log,
      signal,
    }),
    clock,
    log,
    intervalMs: 1_000,
    backoff: { initialMs: restartBackOff.initial, maxMs: restartBackOff.max },
  });
  const p = pod();
  p.spec!.containers[0].command = ["false"]; // the slurm provider runs a command, not an image's
  const created = pods.createPod(p, { signal });
  return {
    clock,
    fail: async () => {
      await created;
      state = "FAILED";
      await pods.poll(signal);
    },
    tick: () => {
      clock.jump(1_000);
      return pods.poll(signal);
    },
    restarts: () => created.then(() => jobs - 1),
    close: () => Deno.remove(sharedDir, { recursive: true }),
  };
}

const drivers: Record<string, () => Driver> = {
  mock,
  process: processProvider,
  fargate,
  aci,
  eci,
  interlink,
  slurm,
};

for (const [name, driver] of Object.entries(drivers)) {
  Deno.test(`${name} restarts a failing container at once, then after 10 s doubling to 5 min`, async () => {
    // The mock's exit hook fails every run at once: it cannot show a long run.
    const runs = name === "mock" ? [] : LONG_RUNS_S.map(([run]) => run);
    const expected = [...KUBELET_SCHEDULE_S, ...runs.map((_, i) => LONG_RUNS_S[i][1])];
    assert.deepEqual(await schedule(driver(), runs), expected);
  });
}
