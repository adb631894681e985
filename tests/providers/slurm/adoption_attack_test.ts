/**
 * A job's comment is written by whoever submits the job (issue 61 item 2): a restarted vkubelet
 * must adopt only jobs it can authenticate, never take a comment's pod name or uid as a path, and
 * never take another pod's `pod.json` for the one a comment names. Each attack is a job listed by
 * a fake backend, running as the pod's user (as the attacker's own job would), then "the orphan
 * sweep": every run the restarted vkubelet lists is removed, as the core does for pods the API
 * no longer has.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import type { JobInfo } from "../../../providers/slurm/client/slurm_client.ts";
import { parseSlurmConfig } from "../../../providers/slurm/config.ts";
import { SlurmJobs } from "../../../providers/slurm/backend.ts";
import { NOBODY, recordingLog, RecordingSlurm, running } from "./_recording_slurm.ts";

const isRoot = Deno.statSync("/proc/self").uid === 0;
const TEAM_A = { user: "team-a", uid: 1001, gid: 1001 };
const TEAM_B = { user: "team-b", uid: 1002, gid: 1002 };

interface World {
  tmp: string;
  sharedDir: string;
  jobs: SlurmJobs;
  slurm: RecordingSlurm;
  warnings: string[];
  /** vkubelet restarted: lists its jobs, then removes every listed pod the API does not have. */
  restartAndSweep(): Promise<Pod[]>;
  close(): Promise<void>;
}

async function world(listed: JobInfo[], extra: Record<string, unknown> = {}): Promise<World> {
  const tmp = await Deno.makeTempDir({ prefix: "vk-slurm-adopt-" });
  const sharedDir = `${tmp}/shared`;
  await Deno.mkdir(sharedDir, { mode: 0o711 });
  await Deno.chmod(sharedDir, 0o711);
  const parsed = parseSlurmConfig({ cli: {}, sharedDir, fileOwner: NOBODY, ...extra });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const slurm = new RecordingSlurm(listed);
  const { log, warnings } = recordingLog();
  const stop = new AbortController();
  const jobs = new SlurmJobs({
    slurm,
    config: parsed.config,
    nodeName: "vk-adopt",
    hostIP: "127.0.0.1",
    clock: realClock,
    log,
    signal: stop.signal,
  });
  return {
    tmp,
    sharedDir,
    jobs,
    slurm,
    warnings,
    async restartAndSweep() {
      const runs = await jobs.list(stop.signal);
      for (const run of runs) await jobs.remove(run.pod, stop.signal, run);
      return runs.map((r) => r.pod);
    },
    async close() {
      stop.abort();
      await Deno.remove(tmp, { recursive: true });
    },
  };
}

/** A directory outside the shared directory, with a file in it. */
async function victim(tmp: string): Promise<string> {
  await Deno.mkdir(`${tmp}/victim`);
  await Deno.writeTextFile(`${tmp}/victim/precious`, "keep me\n");
  return `${tmp}/victim`;
}

async function exists(path: string): Promise<boolean> {
  return await Deno.lstat(path).then(() => true, () => false);
}

Deno.test("a forged comment whose uid climbs out of the shared directory removes nothing outside it", async () => {
  // The attacker's own pod directory exists, with a directory of its own in home/.
  const ownUid = "2b8d1ab6-9a51-4a55-a3f3-3f2e1f1b0c11";
  const w = await world([]);
  try {
    const target = await victim(w.tmp);
    const own = `${w.sharedDir}/ns_p_${ownUid}`;
    await Deno.mkdir(`${own}/home/x_`, { recursive: true });
    // ns_p_<uid>/home/x_ + /../../../../victim is <tmp>/victim.
    w.slurm.listed.push(running(
      7,
      `vkubelet node=vk-adopt pod=ns/p_${ownUid}/home/x uid=/../../../../victim run=0`,
      NOBODY.uid,
    ));
    const adopted = await w.restartAndSweep();
    assert.ok(
      await exists(`${target}/precious`),
      `the sweep removed ${target}, outside the shared directory (adopted: ${
        JSON.stringify(adopted.map((p) => p.metadata))
      })`,
    );
    assert.deepEqual(adopted, [], "a comment whose names are not DNS-1123 names is adopted");
  } finally {
    await w.close();
  }
});

Deno.test("a forged comment whose pod name carries .. removes nothing outside the shared directory", async () => {
  const w = await world([]);
  try {
    const target = await victim(w.tmp);
    await Deno.mkdir(`${w.sharedDir}/ns_a_b`, { recursive: true });
    // ns_a_b + /../../victim_<uid>: the uid's own suffix lands on the victim's name.
    await Deno.rename(target, `${w.tmp}/victim_u`);
    w.slurm.listed.push(
      running(8, `vkubelet node=vk-adopt pod=ns/a_b/../../victim uid=u run=0`, NOBODY.uid),
    );
    await w.restartAndSweep();
    assert.ok(
      await exists(`${w.tmp}/victim_u/precious`),
      `the sweep removed ${w.tmp}/victim_u, outside the shared directory`,
    );
  } finally {
    await w.close();
  }
});

Deno.test("a comment that names the node and a valid pod but carries no valid MAC is logged and left alone", async () => {
  // Another user of the same SLURM account (or a job of the node's pods) submits a job commented
  // as vkubelet comments its own; unauthenticated, it is neither adopted nor, as an orphan,
  // cancelled.
  const uid = "7c0a4a9e-5b7e-4d6a-9f61-0e6c2f0d2a33";
  const base = `vkubelet node=vk-adopt pod=ns/web uid=${uid} run=0`;
  const w = await world([
    running(11, base, NOBODY.uid),
    running(12, `${base} mac=AAAAAAAAAAAAAAAAAAAAAA`, NOBODY.uid),
  ]);
  try {
    const adopted = await w.restartAndSweep();
    assert.deepEqual(
      adopted.map((p) => p.metadata?.name),
      [],
      "an unauthenticated job was adopted as a pod of this node",
    );
    assert.deepEqual(w.slurm.cancelled, [], "an unauthenticated job was cancelled");
    for (const id of [11, 12]) {
      assert.ok(
        w.warnings.some((m) => m.includes(`SLURM job ${id} `)),
        `nothing logged about job ${id}: ${w.warnings.join(" | ")}`,
      );
    }
  } finally {
    await w.close();
  }
});

Deno.test({
  name: "team A cannot adopt team B's pod through a link to its pod.json",
  ignore: !isRoot, // runAsUsers needs vkubelet as root
  async fn() {
    const uidA = "0f6f1f9a-3c7e-4f59-8d8e-8c3c6b1d4e01";
    const uidB = "9a1c5e2b-7d44-4b8e-a0f2-6d3e7c9b1a02";
    const w = await world([], { runAsUsers: { "team-a": TEAM_A, "team-b": TEAM_B } });
    try {
      // Team B's pod directory, as vkubelet wrote it, and team A's (its home/ is team A's).
      const dirB = `${w.sharedDir}/team-b_y_${uidB}`;
      await Deno.mkdir(dirB);
      const podB = { metadata: { namespace: "team-b", name: "y", uid: uidB }, spec: {} };
      await Deno.writeTextFile(`${dirB}/pod.json`, JSON.stringify(podB), { mode: 0o600 });
      const dirA = `${w.sharedDir}/team-a_x_${uidA}`;
      await Deno.mkdir(`${dirA}/home`, { recursive: true });
      await Deno.chown(`${dirA}/home`, TEAM_A.uid, TEAM_A.gid);
      // Team A's job links home/l_<uidB> to team B's directory and comments a job for it.
      await Deno.symlink(`../../team-b_y_${uidB}`, `${dirA}/home/l_${uidB}`);
      w.slurm.listed.push(
        running(21, `vkubelet node=vk-adopt pod=team-a/x_${uidA}/home/l uid=${uidB} run=0`, 1001),
      );
      const adopted = await w.restartAndSweep();
      assert.deepEqual(
        adopted.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`),
        [],
        "team A's job was adopted",
      );
      assert.deepEqual(w.slurm.cancelled, [], "a job was cancelled on team A's word");
      assert.ok(await exists(`${dirB}/pod.json`), "team B's pod directory was removed");
    } finally {
      await w.close();
    }
  },
});
