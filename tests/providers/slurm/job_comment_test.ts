/**
 * Job comments and their key (issue 61 item 2): a comment vkubelet signs is adopted by a restarted
 * vkubelet holding the same key in its stateDir, and by no other; the key file is vkubelet's
 * alone; a changed field or a pod.json of another pod is not adopted; the longest comment fits
 * SLURM's 1024 characters.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { loadCommentKey } from "../../../providers/slurm/ownership/comment_key.ts";
import { parseSlurmConfig } from "../../../providers/slurm/config.ts";
import { jobComment, JobCommentKey } from "../../../providers/slurm/ownership/job_comment.ts";
import { SlurmJobs } from "../../../providers/slurm/backend.ts";
import { NOBODY, recordingLog, RecordingSlurm } from "./_recording_slurm.ts";

const isRoot = Deno.statSync("/proc/self").uid === 0;
const UID = "c3a5e0f1-6b2d-4a97-8e14-5f0b9d2c7a66";

function pod(name = "web"): Pod {
  return {
    metadata: { namespace: "ns", name, uid: UID },
    spec: { containers: [{ name: "main", image: "busybox", command: ["true"] }] },
  };
}

/** A vkubelet on `sharedDir` with the key in `stateDir`, over `slurm`. */
function node(tmp: string, stateDir: string, slurm: RecordingSlurm) {
  const parsed = parseSlurmConfig({
    cli: {},
    sharedDir: `${tmp}/shared`,
    stateDir,
    allowRootNamespaces: ["ns"], // the test may run as root, with no fileOwner
  });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const { log, warnings } = recordingLog();
  const stop = new AbortController();
  const jobs = new SlurmJobs({
    slurm,
    config: parsed.config,
    nodeName: "vk-key",
    hostIP: "127.0.0.1",
    clock: realClock,
    log,
    signal: stop.signal,
    commentKey: () => loadCommentKey(parsed.config),
  });
  return { jobs, warnings, signal: stop.signal, stop: () => stop.abort() };
}

async function sharedTmp(): Promise<string> {
  const tmp = await Deno.makeTempDir({ prefix: "vk-slurm-key-" });
  await Deno.mkdir(`${tmp}/shared`, { mode: 0o711 });
  await Deno.chmod(`${tmp}/shared`, 0o711);
  return tmp;
}

Deno.test("a restarted vkubelet adopts the jobs it signed; one with another key adopts none", async () => {
  const tmp = await sharedTmp();
  const me = Deno.statSync(tmp).uid ?? 0;
  const slurm = new RecordingSlurm([], me);
  try {
    const first = node(tmp, `${tmp}/state`, slurm);
    await first.jobs.make(pod(), first.signal);
    first.stop();
    assert.match(slurm.submitted[0].comment, / mac=[A-Za-z0-9_-]{22}$/);
    const info = await Deno.stat(`${tmp}/state/job-comment.key`);
    assert.deepEqual([info.size, (info.mode ?? 0) & 0o777], [32, 0o600]);
    assert.equal((await Deno.stat(`${tmp}/state`)).mode! & 0o777, 0o700);
    const again = node(tmp, `${tmp}/state`, slurm);
    const adopted = await again.jobs.list(again.signal);
    assert.deepEqual(adopted.map((r) => r.pod.metadata?.uid), [UID]);
    assert.equal(adopted[0].pod.spec?.containers[0].command?.[0], "true", "pod.json's spec");
    again.stop();
    const other = node(tmp, `${tmp}/other-state`, slurm);
    assert.deepEqual(await other.jobs.list(other.signal), []);
    assert.match(other.warnings.join("\n"), /its MAC does not verify with this node's key/);
    other.stop();
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("a signed comment whose pod directory holds another pod's pod.json is not adopted", async () => {
  const tmp = await sharedTmp();
  const me = Deno.statSync(tmp).uid ?? 0;
  const slurm = new RecordingSlurm([], me);
  try {
    const first = node(tmp, `${tmp}/state`, slurm);
    await first.jobs.make(pod(), first.signal);
    first.stop();
    const dir = `${tmp}/shared/ns_web_${UID}`;
    await Deno.writeTextFile(`${dir}/pod.json`, JSON.stringify(pod("db")));
    const again = node(tmp, `${tmp}/state`, slurm);
    assert.deepEqual(await again.jobs.list(again.signal), []);
    assert.match(again.warnings.join("\n"), /the pod\.json in its directory is ns\/db/);
    again.stop();
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("a key file others may read, or a stateDir others may write, is refused naming the fix", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "vk-slurm-key-" });
  try {
    await loadCommentKey({ stateDir: `${tmp}/state` });
    await Deno.chmod(`${tmp}/state/job-comment.key`, 0o644);
    await assert.rejects(
      loadCommentKey({ stateDir: `${tmp}/state` }),
      /job-comment\.key is not vkubelet's key .* mode 0644.*remove it/,
    );
    await Deno.chmod(`${tmp}/state/job-comment.key`, 0o600);
    await Deno.chmod(`${tmp}/state`, 0o777);
    await assert.rejects(
      loadCommentKey({ stateDir: `${tmp}/state` }),
      /stateDir .* mode 0777: another user could replace the key/,
    );
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test({
  name: "a key file of another user is refused",
  ignore: !isRoot,
  async fn() {
    const tmp = await Deno.makeTempDir({ prefix: "vk-slurm-key-" });
    try {
      await loadCommentKey({ stateDir: `${tmp}/state` });
      await Deno.chown(`${tmp}/state/job-comment.key`, NOBODY.uid, NOBODY.gid);
      await assert.rejects(loadCommentKey({ stateDir: `${tmp}/state` }), /owned by uid 65534/);
    } finally {
      await Deno.remove(tmp, { recursive: true });
    }
  },
});

Deno.test("changing any field of a signed comment breaks its MAC", async () => {
  const key = await JobCommentKey.random();
  const signed = await key.sign(jobComment("vk-key", pod(), 3));
  assert.deepEqual(await key.check(signed), {
    kind: "signed",
    id: { node: "vk-key", namespace: "ns", name: "web", uid: UID, run: 3 },
  });
  for (
    const [from, to] of [["run=3", "run=4"], ["ns/web", "ns/wed"], ["vk-key", "vk-kez"], [
      "c3a5",
      "c3a6",
    ]]
  ) {
    assert.equal((await key.check(signed.replace(from, to))).kind, "forged", `${from} → ${to}`);
  }
  assert.equal((await key.check(signed.replace(/ mac=.*/, ""))).kind, "unsigned");
  assert.equal((await key.check(`${signed}\n`)).kind, "malformed");
  assert.equal((await key.check(signed.replace("uid=c3a5", "uid=/../c3a5"))).kind, "malformed");
});

Deno.test("the longest comment fits SLURM's 1024 characters", async () => {
  const long = (n: number) => `${"a".repeat(62)}.`.repeat(4).slice(0, n - 1) + "a";
  const p: Pod = { metadata: { namespace: "n".repeat(63), name: long(253), uid: UID } };
  const signed = await (await JobCommentKey.random()).sign(jobComment(long(253), p, 999_999_999));
  assert.ok(signed.length <= 1024, `${signed.length} characters`);
  assert.equal((await (await JobCommentKey.random()).check(signed)).kind, "forged", "parses");
});
