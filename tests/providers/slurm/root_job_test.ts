/**
 * A pod's job never runs as root by accident (issue 61 item 4): a namespace missing from
 * `runAsUsers` with no `fileOwner` used to be submitted as vkubelet's user, root, and
 * `runAsNonRoot` was never checked. Now `fileOwner` is required beside `runAsUsers`, a job whose
 * user would be uid 0 is refused unless the admin names its namespace in `allowRootNamespaces`,
 * and `runAsNonRoot` is refused with the kubelet's message whatever the config allows.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { parseSlurmConfig } from "../../../providers/slurm/config.ts";
import { SlurmJobs } from "../../../providers/slurm/backend.ts";
import { recordingLog, RecordingSlurm } from "./_recording_slurm.ts";

const isRoot = Deno.statSync("/proc/self").uid === 0;
const ROOT = { uid: 0, gid: 0 };
const UID = "4e2b9c71-0d3a-4f8e-9b56-2c7a1e0f3d85";

function pod(securityContext: Record<string, unknown> = {}, namespace = "team-c"): Pod {
  return {
    metadata: { namespace, name: "web", uid: UID },
    spec: {
      securityContext,
      containers: [{ name: "main", image: "busybox", command: ["id", "-u"] }],
    },
  };
}

/** Submits `pod` through SlurmJobs with `config`; what was submitted, or the refusal. */
async function submit(
  config: Record<string, unknown>,
  p: Pod,
): Promise<{ submitted: number; error?: string }> {
  const tmp = await Deno.makeTempDir({ prefix: "vk-slurm-root-" });
  const sharedDir = `${tmp}/shared`;
  await Deno.mkdir(sharedDir, { mode: 0o711 });
  await Deno.chmod(sharedDir, 0o711);
  const parsed = parseSlurmConfig({ cli: {}, sharedDir, ...config });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const slurm = new RecordingSlurm([], 0);
  const stop = new AbortController();
  const jobs = new SlurmJobs({
    slurm,
    config: parsed.config,
    nodeName: "vk-root",
    hostIP: "127.0.0.1",
    clock: realClock,
    log: recordingLog().log,
    signal: stop.signal,
  });
  try {
    await jobs.make(p, stop.signal);
    return { submitted: slurm.submitted.length };
  } catch (err) {
    return { submitted: slurm.submitted.length, error: String(err) };
  } finally {
    stop.abort();
    await Deno.remove(tmp, { recursive: true });
  }
}

Deno.test("runAsUsers without fileOwner is a config error naming fileOwner", () => {
  const parsed = parseSlurmConfig({
    cli: {},
    sharedDir: "/shared",
    runAsUsers: { "team-a": { user: "alice", uid: 1001, gid: 1001 } },
  });
  assert.equal(parsed.ok, false, "runAsUsers without fileOwner was accepted");
  assert.match(
    parsed.ok ? "" : parsed.errors.join("\n"),
    /^fileOwner: fileOwner is required when runAsUsers is set/m,
  );
});

Deno.test({
  name: "vkubelet as root with no fileOwner does not submit a pod's job as root",
  ignore: !isRoot, // only root's own jobs are root's
  async fn() {
    const got = await submit({}, pod());
    assert.equal(got.submitted, 0, "the job was submitted as root");
    assert.match(
      got.error ?? "",
      /would run as root \(uid 0\): namespace team-c has no runAsUsers entry and fileOwner is not set.*list team-c in allowRootNamespaces/,
    );
  },
});

Deno.test("a fileOwner of uid 0 runs no job unless the admin names its namespace", async () => {
  const got = await submit({ fileOwner: ROOT }, pod());
  assert.equal(got.submitted, 0, "the job was submitted as root");
  assert.match(got.error ?? "", /would run as root \(uid 0\): the provider config's fileOwner/);
});

Deno.test("runAsNonRoot with a job user of uid 0 is refused with the kubelet's message", async () => {
  const got = await submit({ fileOwner: ROOT }, pod({ runAsNonRoot: true }));
  assert.equal(got.submitted, 0, "a runAsNonRoot pod's job was submitted as root");
  assert.match(
    got.error ?? "",
    /container has runAsNonRoot and image will run as root \(pod: "web_team-c\(4e2b9c71-[^)]+\)", container: main\)/,
  );
});
