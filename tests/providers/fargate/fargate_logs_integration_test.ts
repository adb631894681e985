/**
 * `kubectl logs` of a fargate pod from CloudWatch Logs, with moto as CloudWatch Logs: the lines
 * are written into the container's stream through moto, as the awslogs driver would; `--tail`,
 * `--timestamps`, `--limit-bytes`, `-f` (by polling) and `--previous` after a restart; and
 * `kubectl exec` refused with the reason.
 */
import assert from "node:assert/strict";
import { startFargateEnv } from "./_setup.ts";
import { eventually } from "../../../tools/harness/wait.ts";

Deno.test("fargate provider: kubectl logs reads the container's CloudWatch Logs stream", async (t) => {
  const env = await startFargateEnv("fargate-logs");
  const { kubectl } = env;
  try {
    await kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "talker", labels: { app: "talker" } },
        spec: { ...env.placement, containers: [{ name: "main", image: "busybox" }] },
      }),
    );
    const pod = await eventually("pod talker Running", async () => {
      const [p] = await env.pods("app=talker");
      return p?.status?.phase === "Running" && p;
    });
    const [task] = await env.runningTasksOf(pod);
    await env.writeLog(task.taskArn!, "main", ["hello", "line two", "line three"]);

    await t.step("the whole log, the tail, timestamps and a byte limit", async () => {
      assert.equal(await kubectl(["logs", "talker"]), "hello\nline two\nline three\n");
      assert.equal(await kubectl(["logs", "talker", "--tail=1"]), "line three\n");
      assert.match(
        await kubectl(["logs", "talker", "--timestamps", "--tail=1"]),
        /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z line three\n$/,
      );
      assert.equal(await kubectl(["logs", "talker", "--limit-bytes=8"]), "hello\nli");
    });

    await t.step("-f: the lines so far, then a line written later", async () => {
      const follow = new Deno.Command(env.cluster.binary, {
        args: [
          "kubectl",
          `--kubeconfig=${env.cluster.kubeconfigPath}`,
          `--namespace=${env.ns}`,
          "logs",
          "-f",
          "talker",
        ],
        stdout: "piped",
        stderr: "null",
      }).spawn();
      let seen = "";
      const reading = (async () => {
        for await (const chunk of follow.stdout.pipeThrough(new TextDecoderStream())) {
          seen += chunk;
        }
      })();
      try {
        await eventually("the lines so far", () => seen.includes("line three\n"), 20_000);
        await env.writeLog(task.taskArn!, "main", ["written later"]);
        await eventually("the new line", () => seen.includes("written later\n"), 20_000);
      } finally {
        follow.kill("SIGTERM");
        await follow.status;
        await reading;
      }
      assert.equal(seen, "hello\nline two\nline three\nwritten later\n");
    });

    await t.step(
      "-f --since-time: each line after the time once, those written later too",
      async () => {
        await new Promise((r) => setTimeout(r, 20));
        const since = new Date().toISOString();
        await new Promise((r) => setTimeout(r, 20));
        await env.writeLog(task.taskArn!, "main", ["after one", "after two"]);
        const follow = new Deno.Command(env.cluster.binary, {
          args: [
            "kubectl",
            `--kubeconfig=${env.cluster.kubeconfigPath}`,
            `--namespace=${env.ns}`,
            "logs",
            "-f",
            `--since-time=${since}`,
            "talker",
          ],
          stdout: "piped",
          stderr: "null",
        }).spawn();
        let seen = "";
        const reading = (async () => {
          for await (const chunk of follow.stdout.pipeThrough(new TextDecoderStream())) {
            seen += chunk;
          }
        })();
        try {
          await eventually("the lines after the time", () => seen.includes("after two\n"), 20_000);
          await env.writeLog(task.taskArn!, "main", ["after three"]);
          await eventually("the new line", () => seen.includes("after three\n"), 20_000);
          // Two more polls: a replay would come with them.
          await new Promise((r) => setTimeout(r, 2500));
        } finally {
          follow.kill("SIGTERM");
          await follow.status;
          await reading;
        }
        assert.equal(seen, "after one\nafter two\nafter three\n");
      },
    );

    await t.step("exec says plainly that Fargate pods do not support it", async () => {
      const res = await env.cluster.kubectl(["-n", env.ns, "exec", "talker", "--", "true"]);
      assert.notEqual(res.code, 0);
      assert.match(res.stderr, /exec is not supported by this node's provider: ECS Exec needs/);
    });

    await t.step("--previous: the stream of the task before a restart", async () => {
      await env.stopTask(task.taskArn!, "spot interruption");
      await eventually("the pod restarted", async () => {
        const [p] = await env.pods("app=talker");
        return p?.status?.containerStatuses?.[0]?.restartCount === 1;
      });
      assert.equal(
        await kubectl(["logs", "talker", "--previous"]),
        "hello\nline two\nline three\nwritten later\nafter one\nafter two\nafter three\n",
      );
      assert.equal(await kubectl(["logs", "talker"]), "", "the new task wrote nothing yet");
    });
  } finally {
    await env.close();
  }
});
