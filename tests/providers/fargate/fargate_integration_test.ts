/**
 * The fargate provider against the local control plane and moto (issue 19's "Verified
 * against"): a Deployment of 5 becomes 5 ECS tasks with the right task definitions, tags and
 * network config, its pods Running with the tasks' IPs; a task stopped behind vkubelet's back
 * shows in the pod's status and the restart policy decides what follows; a pod Fargate cannot
 * run fails naming the field; a restarted vkubelet adopts its tasks and starts none twice; scale
 * to 0 stops the tasks and deregisters their task definitions. The task IPs moto hands out are
 * data only: nothing here dials them.
 */
import assert from "node:assert/strict";
import { DescribeTaskDefinitionCommand } from "@aws-sdk/client-ecs";
import { LOG_GROUP, startFargateEnv, tag, taskIp } from "./_setup.ts";
import { eventually } from "../../../tools/harness/wait.ts";

Deno.test("fargate provider: pods run as ECS tasks in moto and follow the API", async (t) => {
  const env = await startFargateEnv("fargate");
  const { kubectl, moto, placement } = env;
  const web = (replicas: number) => ({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web" },
    spec: {
      replicas,
      selector: { matchLabels: { app: "web" } },
      template: {
        metadata: { labels: { app: "web" } },
        spec: {
          ...placement,
          terminationGracePeriodSeconds: 5,
          containers: [{
            name: "main",
            image: "public.ecr.aws/docker/library/busybox:1.36",
            command: ["sh", "-c"],
            args: ["echo hello; sleep 3600"],
            env: [{ name: "GREETING", value: "hi" }],
            ports: [{ containerPort: 8080 }],
            workingDir: "/srv",
            resources: { requests: { cpu: "300m", memory: "600Mi" } },
          }],
        },
      },
    },
  });
  const bare = (name: string, spec: Record<string, unknown>) =>
    JSON.stringify({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, labels: { app: name } },
      spec: { ...placement, ...spec },
    });
  try {
    await kubectl(["apply", "-f", "-"], JSON.stringify(web(5)));

    await t.step("5 replicas → 5 ECS tasks with the right definitions, tags, network", async () => {
      await kubectl(["rollout", "status", "deployment/web", "--timeout=90s"]);
      const running = await env.pods("app=web");
      assert.equal(running.length, 5);
      const tasks = (await env.tasks()).filter((x) => x.lastStatus === "RUNNING");
      assert.equal(tasks.length, 5);
      for (const pod of running) {
        const task = tasks.find((x) => tag(x, "vkubelet.io/uid") === pod.metadata?.uid);
        assert.ok(task, `no task for pod ${pod.metadata?.name}`);
        assert.equal(tag(task, "vkubelet.io/namespace"), env.ns);
        assert.equal(tag(task, "vkubelet.io/pod"), pod.metadata?.name);
        assert.equal(tag(task, "vkubelet.io/node"), env.nodeName);
        assert.equal(tag(task, "team"), "platform");
        assert.equal(task.launchType, "FARGATE");
        const eni = task.attachments?.find((a) => a.type === "ElasticNetworkInterface");
        assert.equal(eni?.details?.find((d) => d.name === "subnetId")?.value, moto.subnet);
        assert.ok(taskIp(task));
        assert.equal(pod.status?.phase, "Running");
        assert.equal(pod.status?.podIP, taskIp(task), "the pod IP is the task's");
        const def = (await moto.ecs.send(
          new DescribeTaskDefinitionCommand({ taskDefinition: task.taskDefinitionArn }),
        )).taskDefinition!;
        assert.equal(def.family, `vk_${env.ns}_${pod.metadata?.name}`);
        assert.equal(def.networkMode, "awsvpc");
        assert.deepEqual(def.requiresCompatibilities, ["FARGATE"]);
        // 0.3 vCPU and 600 MiB rounded up to the next Fargate size.
        assert.equal([def.cpu, def.memory].join("/"), "512/1024");
        const c = def.containerDefinitions![0];
        assert.deepEqual(c.entryPoint, ["sh", "-c"]);
        assert.deepEqual(c.command, ["echo hello; sleep 3600"]);
        assert.equal(c.workingDirectory, "/srv");
        assert.ok(c.environment?.some((e) => e.name === "GREETING" && e.value === "hi"));
        assert.equal(c.portMappings?.[0]?.containerPort, 8080);
        assert.equal(c.logConfiguration?.logDriver, "awslogs");
        assert.equal(c.logConfiguration?.options?.["awslogs-group"], LOG_GROUP);
      }
      const events = await kubectl(["get", "events", "--field-selector=reason=FargateAdjusted"]);
      assert.match(events, /task size rounded up/);
    });

    await t.step("a task stopped behind our back is restarted (restartPolicy Always)", async () => {
      const [pod] = await env.pods("app=web");
      const [before] = await env.runningTasksOf(pod);
      await env.stopTask(before.taskArn!, "spot interruption");
      const after = await eventually("the pod restarted in a new task", async () => {
        const [p] = (await env.pods("app=web")).filter((x) =>
          x.metadata?.uid === pod.metadata?.uid
        );
        const c = p?.status?.containerStatuses?.[0];
        return c?.restartCount === 1 && c.state?.running && p;
      });
      const c = after.status!.containerStatuses![0];
      assert.match(c.lastState?.terminated?.message ?? "", /spot interruption/);
      const tasks = await env.runningTasksOf(pod);
      assert.equal(tasks.length, 1);
      assert.notEqual(tasks[0].taskArn, before.taskArn);
      assert.equal(after.status?.podIP, taskIp(tasks[0]));
    });

    await t.step(
      "restartPolicy Never: a stopped task ends the pod, with ECS's reason",
      async () => {
        await kubectl(
          ["apply", "-f", "-"],
          bare("once", {
            restartPolicy: "Never",
            containers: [{ name: "main", image: "busybox", command: ["true"] }],
          }),
        );
        const pod = await eventually("pod once Running", async () => {
          const [p] = await env.pods("app=once");
          return p?.status?.phase === "Running" && p;
        });
        const [task] = await env.runningTasksOf(pod);
        await env.stopTask(task.taskArn!, "essential container exited");
        const done = await eventually("pod once Succeeded", async () => {
          const [p] = await env.pods("app=once");
          return p?.status?.phase === "Succeeded" && p;
        });
        const terminated = done.status?.containerStatuses?.[0]?.state?.terminated;
        assert.equal(terminated?.exitCode, 0); // moto reports every container's exit code as 0
        assert.match(terminated?.message ?? "", /essential container exited/);
        assert.deepEqual(await env.runningTasksOf(pod), [], "no new task for a pod that ended");
      },
    );

    await t.step(
      "a pod Fargate cannot run fails with ProviderFailed naming the field",
      async () => {
        await kubectl(
          ["apply", "-f", "-"],
          bare("hostpath", {
            containers: [{ name: "main", image: "busybox" }],
            volumes: [{ name: "h", hostPath: { path: "/etc" } }],
          }),
        );
        const failed = await eventually("pod hostpath to fail", async () => {
          const [p] = await env.pods("app=hostpath");
          return p?.status?.reason === "ProviderFailed" && p;
        });
        assert.match(failed.status?.message ?? "", /spec\.volumes\[0\]\.hostPath/);
      },
    );

    await t.step("a restarted vkubelet adopts its tasks and starts none twice", async () => {
      const runningArns = async () =>
        (await env.tasks()).filter((x) => x.lastStatus === "RUNNING").map((x) => x.taskArn)
          .sort();
      const before = await runningArns();
      assert.equal(before.length, 5);
      await env.restart();
      // Several status rounds and a resync of every pod.
      await new Promise((r) => setTimeout(r, 4000));
      assert.deepEqual(await runningArns(), before);
      const running = await env.pods("app=web");
      assert.equal(running.length, 5);
      assert.ok(running.every((p) => p.status?.phase === "Running"));
    });

    await t.step(
      "scale to 0: tasks stopped, task definitions deregistered and deleted",
      async () => {
        const tasks = (await env.tasks()).filter((x) =>
          x.lastStatus === "RUNNING" && tag(x, "vkubelet.io/pod")?.startsWith("web-")
        );
        assert.equal(tasks.length, 5);
        await kubectl(["scale", "deployment/web", "--replicas=0"]);
        await eventually("no web pods left", async () => (await env.pods("app=web")).length === 0);
        await eventually("every web task stopped", async () => {
          const now = await env.tasks();
          return tasks.every((x) =>
            now.find((y) => y.taskArn === x.taskArn)?.lastStatus === "STOPPED"
          );
        });
        // Deregistered and deleted: ECS no longer describes them.
        for (const task of tasks) {
          await assert.rejects(
            moto.ecs.send(
              new DescribeTaskDefinitionCommand({ taskDefinition: task.taskDefinitionArn }),
            ),
            (err: Error) => err.name === "ClientException",
            `${task.taskDefinitionArn} is still there`,
          );
        }
      },
    );
  } finally {
    await env.close();
  }
});
