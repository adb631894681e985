/**
 * A job owns the files in its pod directory; vkubelet (root when `fileOwner` is set) must not be
 * led by them (issue 51 item 2). The "job" here is the test writing into the pod directory as the
 * job's user (`setpriv` to nobody), with a fake backend that lists the pods' jobs as RUNNING: a
 * link at the log path to a root-only file, a link at the stdin path (and at the `.closed` path)
 * followed by an attach, and a FIFO or a `/dev/zero` link as a state file (these need root); and a
 * log longer than one bounded read.
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { getLogger } from "../../../base/log.ts";
import { parseSlurmConfig } from "../../../providers/slurm/config.ts";
import { SlurmProvider } from "../../../providers/slurm/mod.ts";
import { hostUser } from "../../../providers/slurm/ownership/identity.ts";
import { readLogFile } from "../../../providers/slurm/streams/logs.ts";
import { podDirOf } from "../../../providers/slurm/request/pod_dir.ts";
import { FakeSlurmBackend, NOBODY } from "../../../tools/harness/slurm.ts";
import { eventually } from "../../../tools/harness/wait.ts";

const isRoot = Deno.statSync("/proc/self").uid === 0;

/** Runs a shell command as the job's user (nobody): what a job could do in its directory. */
async function asJob(script: string): Promise<void> {
  const out = await new Deno.Command("setpriv", {
    args: [`--reuid=${NOBODY.uid}`, `--regid=${NOBODY.gid}`, "--clear-groups", "sh", "-c", script],
    stderr: "piped",
  }).output();
  assert.ok(out.success, `as the job: ${script}: ${new TextDecoder().decode(out.stderr)}`);
}

interface World {
  tmp: string;
  provider: SlurmProvider;
  dir: (pod: Pod) => string;
  stop: () => Promise<void>;
}

async function world(): Promise<World> {
  const tmp = await Deno.makeTempDir({ prefix: "vk-slurm-files-" });
  await Deno.chmod(tmp, 0o711);
  const sharedDir = `${tmp}/shared`;
  await Deno.mkdir(sharedDir, { mode: 0o711 });
  await Deno.chmod(sharedDir, 0o711);
  const parsed = parseSlurmConfig({
    cli: {},
    sharedDir,
    stateDir: `${tmp}/state`,
    fileOwner: NOBODY,
    statusInterval: "100ms",
  });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const shutdown = new AbortController();
  const provider = new SlurmProvider(parsed.config, {
    nodeName: "vk-files",
    log: getLogger(["vkubelet", "provider", "test"]),
    clock: realClock,
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal: shutdown.signal,
  }, new FakeSlurmBackend());
  return {
    tmp,
    provider,
    dir: (pod) => podDirOf(parsed.config, pod),
    stop: async () => {
      await provider.close();
      shutdown.abort();
      await Deno.remove(tmp, { recursive: true });
    },
  };
}

function podOf(name: string, container: Partial<Pod["spec"] & object>["containers"] = []): Pod {
  return {
    metadata: { namespace: "ns", name, uid: crypto.randomUUID() },
    spec: {
      restartPolicy: "Never",
      containers: container.length
        ? container
        : [{ name: "c", image: "busybox", command: ["sleep", "3600"] }],
    },
  };
}

async function text(stream: ReadableStream<Uint8Array>): Promise<string> {
  return await new Response(stream).text();
}

/** A root-only file (in a directory only root may enter) with a secret in it. */
async function rootOnlySecret(tmp: string): Promise<string> {
  await Deno.mkdir(`${tmp}/root-only`, { mode: 0o700 });
  const path = `${tmp}/root-only/key.pem`;
  await Deno.writeTextFile(path, "TOP SECRET KEY\n", { mode: 0o600 });
  return path;
}

Deno.test({
  name: "a link at the log path to a root-only file never gives its content to kubectl logs",
  ignore: !isRoot,
  fn: async () => {
    const w = await world();
    try {
      const secret = await rootOnlySecret(w.tmp);
      const pod = podOf("logs");
      await w.provider.createPod(pod, {});
      const dir = w.dir(pod);
      const mode = async (path: string) => {
        const info = await Deno.lstat(path);
        return `${info.uid} ${(info.mode! & 0o777).toString(8)}`;
      };
      // The pod directory is vkubelet's, so the job cannot swap its subdirectories for links.
      assert.deepEqual(
        [await mode(dir), await mode(`${dir}/pod.json`), await mode(`${dir}/logs`)],
        ["0 711", "0 600", `${NOBODY.uid} 700`],
      );
      await assert.rejects(asJob(`mv ${dir}/logs ${dir}/old && ln -s /etc ${dir}/logs`));
      await asJob(`ln -s ${secret} ${dir}/logs/c.0.log`);
      const ref = { namespace: "ns", pod: "logs", container: "c" };
      const got = await w.provider.getContainerLogs(ref, {}).then(text, (err) => String(err));
      assert.doesNotMatch(got, /TOP SECRET/);
      assert.match(got, /not a regular file|symbolic link/);
      // A hard link where fs.protected_hardlinks is 0 (made by root here, since it is 1 on this
      // host): a regular file, but not the job's.
      await Deno.remove(`${dir}/logs/c.0.log`);
      await Deno.link(secret, `${dir}/logs/c.0.log`);
      const linked = await w.provider.getContainerLogs(ref, {}).then(text, (err) => String(err));
      assert.doesNotMatch(linked, /TOP SECRET/);
      assert.match(linked, /a file of uid 0/);
      // A FIFO as the log: refused at once, not waited on for a writer.
      await Deno.remove(`${dir}/logs/c.0.log`);
      await asJob(`mkfifo ${dir}/logs/c.0.log`);
      const fifo = await w.provider.getContainerLogs(ref, { signal: AbortSignal.timeout(2000) })
        .then(text, (err) => String(err));
      assert.match(fifo, /is a FIFO/);
      await w.provider.deletePod(pod, {});
    } finally {
      await w.stop();
    }
  },
});

Deno.test({
  name: "a link at the stdin path neither lets attach append to its target nor chown it",
  ignore: !isRoot,
  fn: async () => {
    const w = await world();
    try {
      const pod = podOf("talk", [
        { name: "c", image: "busybox", command: ["cat"], stdin: true },
        { name: "o", image: "busybox", command: ["cat"], stdin: true, stdinOnce: true },
      ]);
      await w.provider.createPod(pod, {});
      const dir = w.dir(pod);
      const target = `${w.tmp}/passwd`;
      await Deno.writeTextFile(target, "root:x:0:0::/root:/bin/sh\n", { mode: 0o644 });
      const created = `${w.tmp}/created-by-root`;
      await asJob(
        `echo $(date +%s%3N) > ${dir}/state/c.0.started; echo $(date +%s%3N) > ${dir}/state/o.0.started; ` +
          `ln -s ${target} ${dir}/stdin/c.0; ln -s ${created} ${dir}/stdin/o.0.closed`,
      );
      await eventually("both containers running", async () => {
        const p = await w.provider.getPod("ns", "talk", {});
        return p?.status?.containerStatuses?.every((c) => c.state?.running) === true;
      }, 10_000);
      const refused: string[] = [];
      for (const container of ["c", "o"]) {
        const stdin = new ReadableStream<Uint8Array>({
          start: (c) => {
            c.enqueue(new TextEncoder().encode("evil::0:0::/:/bin/sh\n"));
            c.close();
          },
        });
        await w.provider.attachToContainer({ namespace: "ns", pod: "talk", container }, {
          io: { stdin, stdout: new WritableStream(), tty: false },
          signal: AbortSignal.timeout(1000),
        }).catch((err) => void refused.push(`${container}: ${err.message}`));
      }
      assert.match(refused.join("\n"), /^c: .*stdin\/c\.0 is a symbolic link/m);
      assert.deepEqual({
        content: await Deno.readTextFile(target),
        owner: (await Deno.stat(target)).uid,
        closedTarget: await Deno.lstat(created).then(() => "created", () => "absent"),
      }, { content: "root:x:0:0::/root:/bin/sh\n", owner: 0, closedTarget: "absent" });
      await w.provider.deletePod(pod, {});
    } finally {
      await w.stop();
    }
  },
});

/** Lets a reader blocked on `fifo` go (the old code's status loop waits there for a writer). */
function releaseFifo(fifo: string): void {
  try {
    fs.closeSync(fs.openSync(fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK));
  } catch {
    // Nobody reads it.
  }
}

for (const [kind, plant] of [["a FIFO", "mkfifo"], ["a /dev/zero link", "ln -s /dev/zero"]]) {
  Deno.test({
    name: `${kind} as a state file stalls no other pod's status`,
    ignore: !isRoot,
    fn: async () => {
      const w = await world();
      const trap = podOf("trap");
      const state = `${w.dir(trap)}/state`;
      try {
        await w.provider.createPod(trap, {});
        const good = podOf("good");
        await w.provider.createPod(good, {});
        await asJob(`${plant} ${state}/c.0.started; ${plant} ${state}/c.0.exit`);
        await new Promise((r) => setTimeout(r, 300)); // a round or two reaches the trap
        await asJob(`echo $(date +%s%3N) > ${w.dir(good)}/state/c.0.started`);
        await eventually("the other pod running", async () => {
          const p = await w.provider.getPod("ns", "good", {});
          return p?.status?.containerStatuses?.[0].state?.running !== undefined;
        }, 3000);
        const p = await w.provider.getPod("ns", "trap", {});
        assert.ok(
          p?.status?.containerStatuses?.[0].state?.waiting,
          "the trapped pod has not started",
        );
        await w.provider.deletePod(trap, {});
        await w.provider.deletePod(good, {});
      } finally {
        // Until the loop has stopped: the old code read one FIFO after the other.
        const release = setInterval(() => {
          releaseFifo(`${state}/c.0.started`);
          releaseFifo(`${state}/c.0.exit`);
        }, 20);
        await w.stop().finally(() => clearInterval(release));
      }
    },
  });
}

Deno.test("a log longer than one read comes whole, and tailLines gives its last lines", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/c.0.log`;
    const lines = Array.from(
      { length: 40_000 },
      (_, i) => `1767225600.${i} line ${i} ${"x".repeat(40)}\n`,
    );
    await Deno.writeTextFile(path, lines.join("")); // about 2.4 MB: three reads
    const file = { path, owner: hostUser(), clock: realClock, done: () => true };
    const all = await text(readLogFile(file, {}));
    assert.equal(all.split("\n").length, 40_001);
    assert.ok(all.endsWith(`line 39999 ${"x".repeat(40)}\n`));
    const tail = await text(readLogFile(file, { tailLines: 2 }));
    assert.equal(tail, `line 39998 ${"x".repeat(40)}\nline 39999 ${"x".repeat(40)}\n`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
