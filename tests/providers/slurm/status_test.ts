/** SLURM job states → the kubelet's pod and container states (no SLURM needed). */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { JobInfo } from "../../../providers/slurm/backend.ts";
import { parseJobs } from "../../../providers/slurm/backend.ts";
import { type PodRecord, podStatusOf } from "../../../providers/slurm/status.ts";
import { formatLogTime, parseLines } from "../../../providers/slurm/logs.ts";

const NOW = Date.parse("2026-01-01T00:00:00Z");

function record(job: Partial<JobInfo>, extra: Partial<PodRecord> = {}): PodRecord {
  const pod: Pod = {
    metadata: { namespace: "ns", name: "p", uid: "u" },
    spec: { restartPolicy: "Never", containers: [{ name: "main", image: "b" }] },
  };
  return {
    pod,
    run: 0,
    jobId: 7,
    job: {
      id: 7,
      state: "RUNNING",
      reason: "None",
      comment: "",
      exitStatus: 0,
      startMs: 0,
      endMs: 0,
      ...job,
    },
    files: new Map(),
    lastTerminated: new Map(),
    deleting: false,
    startTimeMs: NOW - 1000,
    ...extra,
  };
}

Deno.test("a pending job keeps the pod Pending with SLURM's reason in its condition", () => {
  const status = podStatusOf(record({ state: "PENDING", reason: "Resources" }), "10.0.0.1", NOW);
  assert.equal(status.phase, "Pending");
  const waiting = status.containerStatuses?.[0].state?.waiting;
  assert.match(waiting?.message ?? "", /SLURM job 7 is pending: Resources/);
  const condition = status.conditions?.find((c) => c.type === "slurm.vkubelet.io/Job");
  assert.equal(condition?.message, "job 7 PENDING: Resources");
});

Deno.test("a running step is Running; its exit file makes it terminated with its code", () => {
  const running = record({}, { files: new Map([["main", { startedMs: NOW - 500 }]]) });
  assert.equal(podStatusOf(running, "10.0.0.1", NOW).phase, "Running");
  const exited = record({ state: "FAILED", reason: "NonZeroExitCode" }, {
    finished: true,
    files: new Map([["main", { startedMs: NOW - 500, exit: { code: 3, atMs: NOW - 100 } }]]),
  });
  const status = podStatusOf(exited, "10.0.0.1", NOW);
  assert.equal(status.phase, "Failed");
  assert.equal(status.containerStatuses?.[0].state?.terminated?.exitCode, 3);
  assert.equal(status.containerStatuses?.[0].state?.terminated?.reason, "Error");
});

Deno.test("TIMEOUT, OUT_OF_MEMORY and CANCELLED read as the kubelet's terminated states", () => {
  const cases: [string, number, string][] = [
    ["TIMEOUT", 137, "DeadlineExceeded"],
    ["OUT_OF_MEMORY", 137, "OOMKilled"],
    ["CANCELLED", 143, "Error"],
    ["NODE_FAIL", 137, "NodeFail"],
  ];
  for (const [state, code, reason] of cases) {
    const status = podStatusOf(
      record({ state, endMs: NOW - 10 }, { finished: true }),
      "10.0.0.1",
      NOW,
    );
    const t = status.containerStatuses?.[0].state?.terminated;
    assert.equal(status.phase, "Failed", state);
    assert.equal(t?.exitCode, code, state);
    assert.equal(t?.reason, reason, state);
    assert.match(t?.message ?? "", new RegExp(`SLURM job 7 ${state}`));
  }
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
