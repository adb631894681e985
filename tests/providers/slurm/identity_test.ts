/**
 * Who a pod's job is (issue 51 item 8): vkubelet adopts only jobs that run as the pod's user, not
 * any job whose comment names the node (a fake backend); with `runAsUsers` each namespace's pods
 * run as its own SLURM user, own their directories, and cannot read another namespace's pod's
 * launcher; an unlisted namespace's pods run as `fileOwner` (a real single-node SLURM through its
 * commands, vkubelet as root).
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { getLogger } from "../../../base/log.ts";
import type { JobInfo } from "../../../providers/slurm/client/slurm_client.ts";
import { parseSlurmConfig } from "../../../providers/slurm/config.ts";
import { createProvider, SlurmProvider } from "../../../providers/slurm/mod.ts";
import { loadCommentKey } from "../../../providers/slurm/ownership/comment_key.ts";
import { jobComment, type JobCommentKey } from "../../../providers/slurm/ownership/job_comment.ts";
import { FakeSlurmBackend, NOBODY, startSlurm } from "../../../tools/harness/slurm.ts";
import { eventually } from "../../../tools/harness/wait.ts";

/** Debian's `daemon` account: a second user every Debian system has. */
const DAEMON = { user: "daemon", uid: 1, gid: 1 };
const isRoot = Deno.statSync("/proc/self").uid === 0;

function deps(signal: AbortSignal, nodeName = "vk-identity") {
  return {
    nodeName,
    log: getLogger(["vkubelet", "provider", "test"]),
    clock: realClock,
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal,
  };
}

/** A job commented for `pod` ("ns/name") and signed with `key`, as vkubelet submits it. */
async function job(key: JobCommentKey, id: number, userId: number, pod: string): Promise<JobInfo> {
  const [namespace, name] = pod.split("/");
  const uid = `00000000-0000-4000-8000-${String(id).padStart(12, "0")}`;
  return {
    id,
    state: "RUNNING",
    reason: "None",
    comment: await key.sign(jobComment("vk-identity", { metadata: { namespace, name, uid } }, 0)),
    exitStatus: 0,
    startMs: Date.now(),
    endMs: 0,
    userId,
  };
}

Deno.test("only jobs that run as the pod's user are adopted, whatever their comment says", async () => {
  const sharedDir = await Deno.makeTempDir();
  const stateDir = `${sharedDir}.state`;
  const parsed = parseSlurmConfig({
    cli: {},
    sharedDir,
    stateDir,
    fileOwner: NOBODY,
    runAsUsers: { "team-a": DAEMON },
  });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  // Signed with the node's own key: these comments are vkubelet's; only the user is wrong.
  const key = await loadCommentKey(parsed.config);
  const backend = new FakeSlurmBackend({
    jobs: [
      await job(key, 1, NOBODY.uid, "ns/mine"), // fileOwner's: vkubelet's own
      await job(key, 2, 0, "ns/planted"), // root's
      await job(key, 3, 1234, "ns/someone"), // another user's
      await job(key, 4, NOBODY.uid, "team-a/wrong-user"), // team-a's pods run as daemon
      await job(key, 5, DAEMON.uid, "team-a/theirs"),
    ],
  });
  const stop = new AbortController();
  const provider = new SlurmProvider(parsed.config, deps(stop.signal), backend);
  try {
    const listed = (await provider.listPods({})).map((p) =>
      `${p.metadata?.namespace}/${p.metadata?.name}`
    );
    assert.deepEqual(listed.sort(), ["ns/mine", "team-a/theirs"]);
  } finally {
    await provider.close();
    stop.abort();
    await Deno.remove(sharedDir, { recursive: true });
    await Deno.remove(stateDir, { recursive: true });
  }
});

Deno.test({
  name: "slurm provider: each namespace's pods run as its own user and cannot read another's",
  ignore: !isRoot,
  fn: async () => {
    const slurm = await startSlurm();
    Deno.env.set("SLURM_CONF", slurm.conf);
    const stop = new AbortController();
    const provider = createProvider({
      cli: {},
      sharedDir: slurm.sharedDir,
      stateDir: `${slurm.dir}/vk-state`,
      statusInterval: "300ms",
      // team-b is not listed: its pods run as the default identity, fileOwner.
      fileOwner: NOBODY,
      runAsUsers: { "team-a": DAEMON },
    }, deps(stop.signal));
    const podB: Pod = {
      metadata: { namespace: "team-b", name: "b", uid: crypto.randomUUID() },
      spec: {
        containers: [{
          name: "main",
          image: "busybox",
          env: [{ name: "B_SECRET", value: "only-for-team-b" }],
          command: ["sh", "-c", "id -u; exec sleep 300"],
        }],
      },
    };
    const dirB = `${slurm.sharedDir}/team-b_b_${podB.metadata?.uid}`;
    const podA: Pod = {
      metadata: { namespace: "team-a", name: "a", uid: crypto.randomUUID() },
      spec: {
        containers: [{
          name: "main",
          image: "busybox",
          command: [
            "sh",
            "-c",
            `id -u; cat ${dirB}/c/main.sh || echo "no access"; exec sleep 300`,
          ],
        }],
      },
    };
    const dirA = `${slurm.sharedDir}/team-a_a_${podA.metadata?.uid}`;
    const logs = async (pod: Pod) =>
      await new Response(
        await provider.getContainerLogs({
          namespace: pod.metadata!.namespace!,
          pod: pod.metadata!.name!,
          container: "main",
        }, {}),
      ).text();
    try {
      await provider.createPod(podB, {});
      await provider.createPod(podA, {});
      for (const pod of [podA, podB]) {
        await eventually(`${pod.metadata?.name} has written its log`, async () => {
          const text = await logs(pod).catch(() => "");
          return (pod === podB ? /^\d+\n/ : /no access/).test(text);
        }, 120_000);
      }
      const logA = await logs(podA);
      assert.match(logA, /^1\n/, "team-a's job runs as daemon");
      assert.match(logA, /Permission denied/);
      assert.doesNotMatch(logA, /only-for-team-b/);
      assert.equal(await logs(podB), `${NOBODY.uid}\n`, "team-b's job runs as nobody");
      const owner = async (path: string) => {
        const info = await Deno.stat(path);
        return `${info.uid}:${info.gid} ${(info.mode! & 0o777).toString(8)}`;
      };
      assert.deepEqual(
        [await owner(`${dirA}/c`), await owner(`${dirB}/c`), await owner(`${dirB}/c/main.sh`)],
        ["1:1 700", `${NOBODY.uid}:${NOBODY.gid} 700`, `${NOBODY.uid}:${NOBODY.gid} 700`],
      );
      await eventually("a running", async () => {
        const p = await provider.getPod("team-a", "a", {});
        return p?.status?.containerStatuses?.[0].state?.running !== undefined;
      }, 60_000);
      let out = "";
      const code = await provider.runInContainer(
        { namespace: "team-a", pod: "a", container: "main" },
        {
          command: ["id", "-u"],
          io: {
            stdout: new WritableStream({ write: (c) => void (out += new TextDecoder().decode(c)) }),
            tty: false,
          },
        },
      );
      assert.deepEqual([code, out], [0, "1\n"], "kubectl exec runs as the namespace's user");
    } finally {
      await provider.deletePod(podA, {}).catch(() => {});
      await provider.deletePod(podB, {}).catch(() => {});
      await provider.close();
      stop.abort();
      Deno.env.delete("SLURM_CONF");
      await slurm.stop();
    }
  },
});
