/**
 * SLURM job states → the kubelet's pod and container states (no SLURM needed): a pod's job, as a
 * fake slurmctld lists it, and its state files, read through the kit's RemotePods.
 */
import assert from "node:assert/strict";
import type { Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "../../../base/log.ts";
import { RemotePods } from "../../../provider/mod.ts";
import type { JobInfo, SlurmClient } from "../../../providers/slurm/client/slurm_client.ts";
import { parseJobs } from "../../../providers/slurm/client/slurm_client.ts";
import { parseSlurmConfig, type SlurmConfig } from "../../../providers/slurm/config.ts";
import { hostUser } from "../../../providers/slurm/ownership/identity.ts";
import { SlurmJobs } from "../../../providers/slurm/backend.ts";
import { jobComment, JobCommentKey } from "../../../providers/slurm/ownership/job_comment.ts";
import { podDirOf } from "../../../providers/slurm/request/pod_dir.ts";
import { formatLogTime, parseLines } from "../../../providers/slurm/streams/logs.ts";
import { FakeSlurmBackend } from "../../../tools/harness/slurm.ts";
import { FakeClock } from "../../fakes/clock.ts";

const NOW = Date.parse("2026-01-01T00:00:00Z");
const UID = "3d1e7a52-8c4b-4f0e-b2a9-6e5f1c0d7b34";

/** The kit's RemotePods over SlurmJobs on `slurm`, as the provider wires them, at NOW. */
function podsOn(
  slurm: SlurmClient,
  config: SlurmConfig,
  signal: AbortSignal,
  key?: JobCommentKey,
) {
  const clock = new FakeClock(NOW);
  const log = getLogger(["test"]);
  const backend = new SlurmJobs({
    slurm,
    config,
    nodeName: "n",
    hostIP: "127.0.0.1",
    clock,
    log,
    signal,
    ...(key ? { commentKey: () => Promise.resolve(key) } : {}),
  });
  return new RemotePods({
    backend,
    clock,
    log,
    intervalMs: 1000,
    hostIP: "127.0.0.1",
    keepPodIP: true,
  });
}

/**
 * The status of pod ns/p whose job 7 (run 0) slurmctld lists as `job`, with these state files
 * (`main.0.exit` → its content), once adopted and read; and the jobs submitted meanwhile.
 */
async function statusOf(
  job: Partial<JobInfo>,
  files: Record<string, string> = {},
  spec: Partial<Pod["spec"] & object> = {},
): Promise<{ status: PodStatus; submitted: number }> {
  const sharedDir = await Deno.makeTempDir();
  // The test may run as root, with no fileOwner: its jobs would be root's.
  const parsed = parseSlurmConfig({ cli: {}, sharedDir, allowRootNamespaces: ["ns"] });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const pod: Pod = {
    metadata: { namespace: "ns", name: "p", uid: UID },
    spec: { restartPolicy: "Never", containers: [{ name: "main", image: "b" }], ...spec },
  };
  const dir = podDirOf(parsed.config, pod);
  await Deno.mkdir(`${dir}/state`, { recursive: true });
  await Deno.writeTextFile(`${dir}/pod.json`, JSON.stringify(pod));
  for (const [name, text] of Object.entries(files)) {
    await Deno.writeTextFile(`${dir}/state/${name}`, text);
  }
  const key = await JobCommentKey.random();
  const slurm = new FakeSlurmBackend({
    user: hostUser().uid,
    jobs: [{
      id: 7,
      state: "RUNNING",
      reason: "None",
      comment: await key.sign(jobComment("n", pod, 0)),
      exitStatus: 0,
      startMs: NOW - 1000,
      endMs: 0,
      userId: hostUser().uid,
      ...job,
    }],
  });
  const stop = new AbortController();
  const pods = podsOn(slurm, parsed.config, stop.signal, key);
  const running = pods.run(stop.signal);
  try {
    await pods.listPods({});
    await pods.poll(stop.signal);
    const got = await pods.getPod("ns", "p");
    return { status: got!.status!, submitted: slurm.jobsList.length - 1 };
  } finally {
    stop.abort();
    await running;
    await Deno.remove(sharedDir, { recursive: true });
  }
}

Deno.test("a pending job keeps the pod Pending with SLURM's reason in its condition", async () => {
  const { status } = await statusOf({ state: "PENDING", reason: "Resources" });
  assert.equal(status.phase, "Pending");
  const waiting = status.containerStatuses?.[0].state?.waiting;
  assert.match(waiting?.message ?? "", /SLURM job 7 is pending: Resources/);
  const condition = status.conditions?.find((c) => c.type === "slurm.vkubelet.io/Job");
  assert.equal(condition?.message, "job 7 PENDING: Resources");
});

Deno.test("a running step is Running; its exit file makes it terminated with its code", async () => {
  const running = await statusOf({}, { "main.0.started": String(NOW - 500) });
  assert.equal(running.status.phase, "Running");
  const { status, submitted } = await statusOf({ state: "FAILED", reason: "NonZeroExitCode" }, {
    "main.0.started": String(NOW - 500),
    "main.0.exit": `3 ${NOW - 100}`,
  });
  assert.equal(status.phase, "Failed");
  assert.equal(status.containerStatuses?.[0].state?.terminated?.exitCode, 3);
  assert.equal(status.containerStatuses?.[0].state?.terminated?.reason, "Error");
  assert.equal(submitted, 0, "restartPolicy Never: not submitted again");
});

Deno.test("TIMEOUT, OUT_OF_MEMORY and CANCELLED read as the kubelet's terminated states", async () => {
  const cases: [string, number, string][] = [
    ["TIMEOUT", 137, "DeadlineExceeded"],
    ["OUT_OF_MEMORY", 137, "OOMKilled"],
    ["CANCELLED", 143, "Error"],
    ["NODE_FAIL", 137, "NodeFail"],
  ];
  for (const [state, code, reason] of cases) {
    const { status } = await statusOf({ state, endMs: NOW - 10 });
    const t = status.containerStatuses?.[0].state?.terminated;
    assert.equal(status.phase, "Failed", state);
    assert.equal(t?.exitCode, code, state);
    assert.equal(t?.reason, reason, state);
    assert.match(t?.message ?? "", new RegExp(`SLURM job 7 ${state}`));
  }
});

Deno.test("a job that FAILED without its container's exit file fails the pod", async () => {
  const { status } = await statusOf({ state: "FAILED", reason: "NonZeroExitCode", endMs: NOW });
  assert.equal(status.phase, "Failed");
  assert.equal(status.containerStatuses?.[0].state?.terminated?.exitCode, 1);
});

Deno.test("activeDeadlineSeconds: a TIMEOUT fails the pod, never resubmitted whatever its policy", async () => {
  const { status, submitted } = await statusOf({ state: "TIMEOUT", endMs: NOW - 10 }, {}, {
    restartPolicy: "Always",
    activeDeadlineSeconds: 60,
  });
  assert.equal(status.phase, "Failed");
  assert.equal(status.reason, "DeadlineExceeded");
  assert.match(status.message ?? "", /SLURM ended job 7: its time limit/);
  assert.equal(submitted, 0);
});

Deno.test("slurmrestd's and squeue's job lists parse, old and new shapes alike", () => {
  const jobs = parseJobs({
    jobs: [
      {
        job_id: 1,
        job_state: "FAILED",
        state_reason: "NonZeroExitCode",
        comment: "c",
        exit_code: 768,
        start_time: 10,
        end_time: 11,
      },
      {
        job_id: 2,
        job_state: ["RUNNING"],
        exit_code: { return_code: { number: 0 } },
        start_time: { number: 12, set: true },
      },
    ],
  });
  assert.deepEqual(jobs.map((j) => [j.id, j.state, j.exitStatus, j.startMs]), [
    [1, "FAILED", 768, 10_000],
    [2, "RUNNING", 0, 12_000],
  ]);
});

Deno.test("log lines keep their step time to the microsecond", () => {
  const { lines, rest } = parseLines("1767225600.123456 hello\n1767225601.5 world\npart");
  assert.deepEqual(lines.map((l) => l.text), ["hello\n", "world\n"]);
  assert.equal(rest, "part");
  assert.equal(formatLogTime(lines[0].micros), "2026-01-01T00:00:00.123456000Z");
});

Deno.test("after a resubmission each container's lastState says how it ended, init containers too", async () => {
  const sharedDir = await Deno.makeTempDir();
  await Deno.chmod(sharedDir, 0o711);
  const parsed = parseSlurmConfig({ cli: {}, sharedDir, allowRootNamespaces: ["ns"] });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const slurm = new FakeSlurmBackend({ user: hostUser().uid });
  const stop = new AbortController();
  const pods = podsOn(slurm, parsed.config, stop.signal);
  const pod: Pod = {
    metadata: { namespace: "ns", name: "p", uid: "u" },
    spec: {
      restartPolicy: "OnFailure",
      initContainers: [{ name: "setup", image: "b", command: ["true"] }],
      containers: [{ name: "main", image: "b", command: ["false"] }],
    },
  };
  try {
    await pods.createPod(pod, {});
    const state = `${podDirOf(parsed.config, pod)}/state`;
    await Deno.writeTextFile(`${state}/setup.0.exit`, `0 ${NOW}`);
    await Deno.writeTextFile(`${state}/main.0.exit`, `3 ${NOW}`);
    slurm.jobsList[0].state = "FAILED";
    await pods.poll(stop.signal); // ended: resubmitted at once (the first back-off is 0 s)
    assert.equal(slurm.jobsList.length, 2);
    const status = (await pods.getPod("ns", "p"))?.status;
    const main = status?.containerStatuses?.[0];
    assert.equal(main?.restartCount, 1);
    assert.equal(main?.lastState?.terminated?.exitCode, 3);
    const setup = status?.initContainerStatuses?.[0];
    assert.equal(setup?.restartCount, 1);
    assert.equal(setup?.lastState?.terminated?.reason, "Completed");
  } finally {
    stop.abort();
    await Deno.remove(sharedDir, { recursive: true });
  }
});
