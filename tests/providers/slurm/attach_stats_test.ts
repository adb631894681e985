/**
 * The slurm provider's attach, exec, adoption and `/stats/summary` against a real single-node
 * SLURM: jobs through slurmrestd as nobody, srun, sstat and the stdin files from vkubelet's host
 * (the `cli` config). Exec steps see the container's env, never vkubelet's; a job of another user
 * whose comment names the node is not adopted.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { getLogger } from "../../../base/log.ts";
import { type AttachIO, isInvalidInput } from "../../../provider/mod.ts";
import { createProvider } from "../../../providers/slurm/mod.ts";
import { NOBODY, startSlurm } from "../../../tools/harness/slurm.ts";
import { eventually } from "../../../tools/harness/wait.ts";

/** A writable that keeps what it was given, as text. */
function collector() {
  let text = "";
  const decoder = new TextDecoder();
  return {
    writable: new WritableStream<Uint8Array>({
      write: (chunk) => void (text += decoder.decode(chunk, { stream: true })),
    }),
    text: () => text,
  };
}

/** A stdin the test writes lines into and ends. */
function input() {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const readable = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
  return {
    readable,
    send: (line: string) => controller.enqueue(new TextEncoder().encode(`${line}\n`)),
    end: () => controller.close(),
  };
}

Deno.test("slurm provider: attach reaches a stdin step, and the summary shows each container's CPU and memory", async (t) => {
  const slurm = await startSlurm();
  Deno.env.set("SLURM_CONF", slurm.conf);
  const shutdown = new AbortController();
  const config = {
    rest: { socket: slurm.socket },
    cli: {},
    sharedDir: slurm.sharedDir,
    stateDir: `${slurm.dir}/vk-state`,
    fileOwner: NOBODY,
    statusInterval: "300ms",
    statsInterval: "1s",
  };
  const deps = {
    nodeName: "vk-attach",
    log: getLogger(["vkubelet", "provider", "test"]),
    clock: realClock,
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal: shutdown.signal,
  };
  const provider = createProvider(config, deps);
  const pod: Pod = {
    metadata: { namespace: "ns", name: "talk", uid: crypto.randomUUID() },
    spec: {
      restartPolicy: "Never",
      containers: [
        {
          name: "burn",
          image: "busybox",
          // Holds about 40 MB (bash keeps the string) and spins.
          command: [
            "bash",
            "-c",
            'x=$(head -c 20000000 /dev/zero | tr "\\0" a); while :; do :; done',
          ],
        },
        {
          name: "echo",
          image: "busybox",
          env: [{ name: "GREETING", value: "from the pod spec" }],
          stdin: true,
          command: ["bash", "-c", 'while read -r l; do echo "got $l"; done'],
        },
        {
          name: "once",
          image: "busybox",
          stdin: true,
          stdinOnce: true,
          command: ["bash", "-c", 'cat; echo "stdin closed"'],
        },
      ],
    },
  };
  const ref = (container: string) => ({ namespace: "ns", pod: "talk", container });
  try {
    await provider.createPod(pod, {});
    await eventually("all three containers running", async () => {
      const p = await provider.getPod("ns", "talk", {});
      return p?.status?.containerStatuses?.every((c) => c.state?.running) === true;
    }, 120_000);

    await t.step("attach sends a line to a while-read container and gets its answer", async () => {
      for (const line of ["one", "two"]) {
        const stdin = input();
        const out = collector();
        const session = provider.attachToContainer(ref("echo"), {
          io: { stdin: stdin.readable, stdout: out.writable, tty: false },
        });
        stdin.send(line);
        await eventually(`the answer to ${line}`, () => out.text().includes(`got ${line}\n`));
        stdin.end();
        await session; // without stdinOnce the session ends with its stdin
        assert.equal(out.text(), `got ${line}\n`, "only output from the session's start");
      }
    });

    await t.step(
      "stdinOnce: the container's stdin closes when the first session ends",
      async () => {
        const stdin = input();
        const out = collector();
        const session = provider.attachToContainer(ref("once"), {
          io: { stdin: stdin.readable, stdout: out.writable, tty: false },
        });
        stdin.send("last words");
        stdin.end();
        await session; // ends when the step does, after cat saw the end of its input
        assert.equal(out.text(), "last words\nstdin closed\n");
      },
    );

    await t.step("attach refuses stdin for a container without it, and a terminal", async () => {
      const io = (extra: Partial<AttachIO>): AttachIO => ({
        stdout: collector().writable,
        tty: false,
        ...extra,
      });
      await assert.rejects(
        provider.attachToContainer(ref("burn"), { io: io({ stdin: input().readable }) }),
        (err: Error) => isInvalidInput(err) && /does not have stdin enabled/.test(err.message),
      );
      await assert.rejects(
        provider.attachToContainer(ref("echo"), { io: io({ tty: true }) }),
        (err: Error) => isInvalidInput(err) && /attach without -t/.test(err.message),
      );
    });

    await t.step("an exec step sees the container's env, not vkubelet's", async () => {
      Deno.env.set("VKUBELET_OWN_SECRET", "vkubelet-only");
      try {
        const out = collector();
        const code = await provider.runInContainer(ref("echo"), {
          command: ["sh", "-c", "env; id -u"],
          io: { stdout: out.writable, tty: false },
        });
        assert.equal(code, 0);
        assert.match(out.text(), /^GREETING=from the pod spec$/m);
        assert.match(out.text(), new RegExp(`^${NOBODY.uid}$`, "m"));
        assert.doesNotMatch(out.text(), /VKUBELET_OWN_SECRET|vkubelet-only/);
      } finally {
        Deno.env.delete("VKUBELET_OWN_SECRET");
      }
    });

    await t.step(
      "a job of another user, or unsigned, whose comment names the node is not adopted",
      async () => {
        // root's job, commented as vkubelet comments its own, for a pod that is not there.
        const foreign = (await slurm.run("sbatch", [
          "--parsable",
          "--comment=vkubelet node=vk-attach pod=ns/planted uid=u-planted run=0",
          "--wrap=sleep 300",
        ])).trim();
        // The node's own job user's job, commented as vkubelet comments its own but with no MAC.
        const unsigned = (await slurm.run("sbatch", [
          "--parsable",
          `--uid=${NOBODY.uid}`,
          `--gid=${NOBODY.gid}`,
          "--chdir=/tmp",
          "--output=/dev/null",
          `--comment=vkubelet node=vk-attach pod=ns/forged uid=${crypto.randomUUID()} run=0`,
          "--wrap=sleep 300",
        ])).trim();
        try {
          const again = new AbortController();
          const restarted = createProvider(config, { ...deps, signal: again.signal });
          try {
            const listed = (await restarted.listPods({})).map((p) => p.metadata?.name).sort();
            assert.deepEqual(listed, ["talk"], "only the job vkubelet submitted and signed");
            const live = JSON.parse(await slurm.run("squeue", ["--json", `--jobs=${unsigned}`]));
            assert.match(String(live.jobs[0]?.job_state), /RUNNING|PENDING/, "left alone");
          } finally {
            await restarted.close();
            again.abort();
          }
        } finally {
          await slurm.run("scancel", [foreign, unsigned]);
        }
      },
    );

    await t.step("the summary names the pod and container and shows real usage", async () => {
      let seen = "";
      const burn = await eventually("burn's CPU time and rate measured", async () => {
        const summary = await provider.getStatsSummary({});
        const p = summary.pods.find((x) => x.podRef.uid === pod.metadata?.uid);
        const c = p?.containers.find((x) => x.name === "burn");
        seen = JSON.stringify(c);
        // sstat counts whole CPU seconds; a loaded machine gives burn a fraction of a core.
        return (c?.cpu?.usageCoreNanoSeconds ?? 0) >= 1e9 && c!.cpu!.usageNanoCores! > 1e6 && c;
      }, 240_000).catch((err) => {
        throw new Error(`${err.message}; last seen: ${seen}`);
      });
      console.log(
        `burn: ${burn.cpu?.usageNanoCores} nanocores, ${burn.cpu?.usageCoreNanoSeconds} core-ns, ${burn.memory?.workingSetBytes} bytes`,
      );
      assert.ok(burn.memory!.workingSetBytes! > 20e6, "burn holds its 20 MB string");
      const metrics = await provider.getMetricsResource({});
      assert.match(
        metrics,
        /container_memory_working_set_bytes\{container="burn",namespace="ns",pod="talk"\} [1-9]/,
      );
    });
  } finally {
    await provider.deletePod(pod, {}).catch(() => {});
    await provider.close();
    shutdown.abort();
    Deno.env.delete("SLURM_CONF");
    await slurm.stop();
  }
});
