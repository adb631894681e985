/**
 * Single-container pods as plain Zun containers, against the real stack
 * (tools/harness/zun.ts): `kubectl logs` with each option Zun's log API serves (and follow by
 * polling it), exec with its output and exit code (and -i/-t refused saying why), the exit code
 * in the container's terminated state, a restart by the pod's policy with the ended run's log
 * under `previous`, adoption by a restarted provider, and stats (CPU time from Zun's top, memory
 * from its stats) that grow while the container burns CPU.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { isNotSupported, metricsText } from "../../../provider/mod.ts";
import { useZun, zunSkipReason } from "../../../tools/harness/zun.ts";
import { withEnv } from "./_env.ts";
import { deleted, exec, logs, refOf, scriptPod, until, zunProvider } from "./_pods.ts";

const skip = await zunSkipReason();

const state = (pod: Pod | undefined) => pod?.status?.containerStatuses?.[0]?.state;

Deno.test({
  name: "a one-container pod on Zun: logs, exec, its exit code, restarts and adoption",
  ignore: skip !== undefined,
  async fn(t) {
    const zun = await useZun();
    const restore = withEnv(zun.env);
    const nodeName = `vk-plain-${crypto.randomUUID().slice(0, 6)}`;
    let { p, close } = zunProvider(nodeName);
    try {
      await t.step("logs with tail, since, timestamps and limit; exec; the exit code", async () => {
        const pod = scriptPod("plain", "echo one; echo two >&2; sleep 8; echo three; exit 4");
        await p.createPod(pod, {});
        await until(p, pod, "running", (now) => state(now)?.running !== undefined);
        for (let i = 0; i < 20 && await logs(p, pod) !== "one\ntwo\n"; i++) {
          await new Promise((r) => setTimeout(r, 500));
        }
        assert.equal(await logs(p, pod), "one\ntwo\n");
        assert.equal(await logs(p, pod, { tailLines: 1 }), "two\n");
        assert.equal(await logs(p, pod, { limitBytes: 5 }), "one\nt");
        assert.equal(await logs(p, pod, { sinceTime: new Date(Date.now() + 60_000) }), "");
        assert.equal(await logs(p, pod, { sinceSeconds: 600 }), "one\ntwo\n");
        const stamped = (await logs(p, pod, { timestamps: true })).split("\n");
        assert.match(stamped[0], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z one$/);

        const hello = await exec(p, pod, [
          "sh",
          "-c",
          "echo it\\'s $0; echo err >&2; exit 7",
          "x y",
        ]);
        assert.deepEqual(hello, { code: 7, out: "it's x y\nerr\n" });
        const stdin = new ReadableStream<Uint8Array>();
        const interactive = await p.runInContainer(refOf(pod), {
          command: ["sh"],
          io: { stdin, tty: true },
        }).then(() => undefined, (e) => e);
        assert.ok(isNotSupported(interactive), String(interactive));
        assert.match(interactive.message, /-i or -t: .*zun-wsproxy/);

        // follow: the rest of the log, ending once the container has stopped
        const followed = await logs(p, pod, { follow: true, sinceSeconds: 600 });
        assert.equal(followed, "one\ntwo\nthree\n");
        const ended = await until(
          p,
          pod,
          "the exit",
          (now) => state(now)?.terminated !== undefined,
        );
        assert.equal(state(ended)?.terminated?.exitCode, 4);
        assert.equal(state(ended)?.terminated?.reason, "Error");
        assert.equal(ended?.status?.phase, "Failed");
        assert.equal(await logs(p, pod), "one\ntwo\nthree\n", "a stopped container's log");
        await deleted(p, pod);
      });

      await t.step("a command without args runs as given: no image Cmd after it", async () => {
        const pod = scriptPod("argv", "");
        pod.spec!.restartPolicy = "Always";
        pod.spec!.containers[0].command = ["sleep", "600"];
        await p.createPod(pod, {});
        await until(p, pod, "running", (now) => state(now)?.running !== undefined);
        const argv = await exec(p, pod, ["cat", "/proc/1/cmdline"]);
        assert.equal(argv.out, "sleep\x00600\x00");
        await new Promise((r) => setTimeout(r, 3_000));
        const now = await p.getPod("default", pod.metadata!.name!, {});
        assert.equal(now?.status?.containerStatuses?.[0]?.restartCount, 0);
        await deleted(p, pod);
      });

      await t.step(
        "OnFailure restarts it, --previous has the ended run's log; adoption",
        async () => {
          const pod = scriptPod("again", "echo run; sleep 10; exit 3", "OnFailure");
          await p.createPod(pod, {});
          const restarted = await until(
            p,
            pod,
            "a restart",
            (now) =>
              (now?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 &&
              state(now)?.running !== undefined,
          );
          const last = restarted?.status?.containerStatuses?.[0]?.lastState?.terminated;
          assert.equal(last?.exitCode, 3);
          assert.equal(await logs(p, pod, { previous: true }), "run\n");

          // A restarted provider adopts the plain container.
          await close();
          ({ p, close } = zunProvider(nodeName));
          const listed = await p.listPods({});
          assert.deepEqual(listed.map((x) => x.metadata?.uid), [pod.metadata?.uid]);
          await p.createPod(pod, {}); // the core hands the pod over: no second container
          const again = await until(p, pod, "running", (now) => state(now)?.running !== undefined);
          assert.ok((again?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1);
          assert.equal((await exec(p, pod, ["echo", "adopted"])).out, "adopted\n");
          await deleted(p, pod);
        },
      );

      await t.step(
        "stats: CPU time grows while it burns CPU, memory from Zun's stats",
        async () => {
          const pod = scriptPod("burn", "while :; do :; done");
          await p.createPod(pod, {});
          await until(p, pod, "running", (now) => state(now)?.running !== undefined);
          const cpuOf = async () => {
            const summary = await p.getStatsSummary({});
            const mine = summary.pods.find((s) => s.podRef.uid === pod.metadata?.uid);
            assert.ok(mine, JSON.stringify(summary));
            assert.ok((mine.memory?.workingSetBytes ?? 0) > 0, JSON.stringify(mine));
            return mine.cpu!.usageCoreNanoSeconds!;
          };
          const first = await cpuOf();
          await new Promise((r) => setTimeout(r, 6_000));
          const second = await cpuOf();
          // 6 s at up to one core each, on a shared machine: at least 1 s more, to the second
          assert.ok(second - first >= 1e9, `${first} → ${second}`);
          const text = await p.getMetricsResource({});
          assert.match(
            text,
            new RegExp(
              `container_cpu_usage_seconds_total\\{container="main",namespace="default",pod="${
                pod.metadata!.name
              }"\\} \\d`,
            ),
          );
          assert.match(text, /container_memory_working_set_bytes\{container="main"/);
          assert.equal(metricsText(await p.getStatsSummary({})).includes("burn-"), true);
          await deleted(p, pod);
        },
      );
    } finally {
      await close();
      restore();
      await zun.stop();
    }
  },
});
