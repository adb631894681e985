/**
 * The fargate provider against the local control plane and moto (issue 19's "Verified
 * against"): a Deployment of 5 becomes 5 ECS tasks with the right task definitions, tags and
 * network config, its pods Running with the tasks' IPs; a task stopped behind vkubelet's back
 * shows in the pod's status and the restart policy decides what follows; `kubectl logs` reads
 * CloudWatch Logs; a restarted vkubelet adopts its tasks and starts none twice; scale to 0 stops
 * the tasks and deregisters their task definitions. The task IPs moto hands out are data only:
 * nothing here dials them.
 */
import assert from "node:assert/strict";
import {
  DescribeTaskDefinitionCommand,
  DescribeTasksCommand,
  ListTasksCommand,
  StopTaskCommand,
  type Task,
} from "@aws-sdk/client-ecs";
import { CreateLogStreamCommand, PutLogEventsCommand } from "@aws-sdk/client-cloudwatch-logs";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { useCluster } from "../../cluster/harness.ts";
import { startVkubelet } from "../../cluster/vkubelet.ts";
import { type Moto, MOTO_ENV, startMoto } from "./_moto.ts";

async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  ms = 60_000,
) {
  const deadline = Date.now() + ms;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out after ${ms / 1000} s waiting for ${what}${last ? `: ${last}` : ""}`);
}

/** Every task moto has for the node (running and stopped), described with tags. */
async function nodeTasks(moto: Moto, nodeName: string): Promise<Task[]> {
  const list = await moto.ecs.send(
    new ListTasksCommand({ cluster: moto.cluster, startedBy: `vk/${nodeName}` }),
  );
  if (!list.taskArns?.length) return [];
  const out = await moto.ecs.send(
    new DescribeTasksCommand({ cluster: moto.cluster, tasks: list.taskArns, include: ["TAGS"] }),
  );
  return out.tasks ?? [];
}

const tag = (task: Task, key: string) => task.tags?.find((t) => t.key === key)?.value;

Deno.test("fargate provider: pods run as ECS tasks in moto and follow the API", async (t) => {
  const cluster = await useCluster();
  const moto = await startMoto();
  const nodeName = `vk-fargate-${crypto.randomUUID().slice(0, 6)}`;
  const ns = await cluster.newNamespace("fargate");
  const kubectl = cluster.kubectlIn(ns);
  const providerConfig = JSON.stringify({
    region: moto.region,
    endpoint: moto.endpoint,
    cluster: moto.cluster,
    subnets: [moto.subnet],
    securityGroups: [moto.securityGroup],
    executionRoleArn: "arn:aws:iam::123456789012:role/ecsTaskExecutionRole",
    logGroup: "/vkubelet/test",
    tags: { team: "platform" },
    statusInterval: "500ms",
  });
  let node = await startVkubelet(cluster, {
    nodeName,
    provider: "fargate",
    providerConfig,
    env: MOTO_ENV,
  }).catch(async (err) => {
    await moto.stop();
    throw err;
  });
  const placement = {
    nodeSelector: { "kubernetes.io/hostname": nodeName },
    tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
  };
  const deployment = (replicas: number) => ({
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
  const pods = async (selector = "app=web"): Promise<Pod[]> =>
    (JSON.parse(await kubectl(["get", "pods", "-l", selector, "-o", "json"])).items as Pod[])
      .filter((p) => !p.metadata?.deletionTimestamp);
  try {
    await kubectl(["apply", "-f", "-"], JSON.stringify(deployment(5)));

    await t.step(
      "5 replicas → 5 ECS tasks with the right definitions, tags and network",
      async () => {
        await kubectl(["rollout", "status", "deployment/web", "--timeout=90s"]);
        const running = await pods();
        assert.equal(running.length, 5);
        const all = await nodeTasks(moto, nodeName);
        const tasks = all.filter((x) => x.lastStatus === "RUNNING");
        assert.equal(tasks.length, 5);
        for (const pod of running) {
          const task = tasks.find((x) => tag(x, "vkubelet.io/uid") === pod.metadata?.uid);
          assert.ok(task, `no task for pod ${pod.metadata?.name}`);
          assert.equal(tag(task, "vkubelet.io/namespace"), ns);
          assert.equal(tag(task, "vkubelet.io/pod"), pod.metadata?.name);
          assert.equal(tag(task, "vkubelet.io/node"), nodeName);
          assert.equal(tag(task, "team"), "platform");
          assert.equal(task.launchType, "FARGATE");
          const eni = task.attachments?.find((a) => a.type === "ElasticNetworkInterface");
          assert.equal(eni?.details?.find((d) => d.name === "subnetId")?.value, moto.subnet);
          const ip = eni?.details?.find((d) => d.name === "privateIPv4Address")?.value;
          assert.ok(ip);
          assert.equal(pod.status?.phase, "Running");
          assert.equal(pod.status?.podIP, ip, "the pod IP is the task's");
          const def = (await moto.ecs.send(
            new DescribeTaskDefinitionCommand({ taskDefinition: task.taskDefinitionArn }),
          )).taskDefinition!;
          assert.equal(def.family, `vk_${ns}_${pod.metadata?.name}`);
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
          assert.equal(c.logConfiguration?.options?.["awslogs-group"], "/vkubelet/test");
        }
        const events = await kubectl([
          "get",
          "events",
          "--field-selector",
          "reason=FargateAdjusted",
        ]);
        assert.match(events, /task size rounded up/);
      },
    );

    await t.step("kubectl logs reads the container's CloudWatch Logs stream", async () => {
      const pod = (await pods())[0];
      const task = (await nodeTasks(moto, nodeName)).find((x) =>
        tag(x, "vkubelet.io/uid") === pod.metadata?.uid && x.lastStatus === "RUNNING"
      )!;
      const stream = `vk/main/${task.taskArn!.split("/").at(-1)}`;
      await moto.logs.send(
        new CreateLogStreamCommand({ logGroupName: "/vkubelet/test", logStreamName: stream }),
      );
      const now = Date.now();
      await moto.logs.send(
        new PutLogEventsCommand({
          logGroupName: "/vkubelet/test",
          logStreamName: stream,
          logEvents: ["hello", "line two", "line three"].map((message, i) => ({
            message,
            timestamp: now + i,
          })),
        }),
      );
      const name = pod.metadata!.name!;
      assert.equal(await kubectl(["logs", name]), "hello\nline two\nline three\n");
      assert.equal(await kubectl(["logs", name, "--tail=1"]), "line three\n");
      assert.match(
        await kubectl(["logs", name, "--timestamps", "--tail=1"]),
        /^\d{4}-\d\d-\d\dT\S+Z line three\n$/,
      );
      assert.equal(await kubectl(["logs", name, "--limit-bytes=8"]), "hello\nli");

      // -f: the lines so far, then a line written later, by polling.
      const follow = new Deno.Command(cluster.binary, {
        args: ["kubectl", `--kubeconfig=${cluster.kubeconfigPath}`, "-n", ns, "logs", "-f", name],
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
        await eventually(
          "the existing lines through -f",
          () => seen.includes("line three"),
          20_000,
        );
        await moto.logs.send(
          new PutLogEventsCommand({
            logGroupName: "/vkubelet/test",
            logStreamName: stream,
            logEvents: [{ message: "written later", timestamp: Date.now() + 10 }],
          }),
        );
        await eventually("the new line through -f", () => seen.includes("written later\n"), 20_000);
      } finally {
        follow.kill("SIGTERM");
        await follow.status;
        await reading;
      }
      assert.equal(seen, "hello\nline two\nline three\nwritten later\n");
    });

    await t.step(
      "a task stopped behind vkubelet's back is restarted (restartPolicy Always)",
      async () => {
        const pod = (await pods())[1]; // not the pod whose log the step above wrote
        const before = (await nodeTasks(moto, nodeName)).find((x) =>
          tag(x, "vkubelet.io/uid") === pod.metadata?.uid && x.lastStatus === "RUNNING"
        )!;
        await moto.ecs.send(
          new StopTaskCommand({
            cluster: moto.cluster,
            task: before.taskArn,
            reason: "spot interruption",
          }),
        );
        const after = await eventually("the pod restarted in a new task", async () => {
          const [p] = (await pods()).filter((x) => x.metadata?.uid === pod.metadata?.uid);
          const c = p?.status?.containerStatuses?.[0];
          return c?.restartCount === 1 && c.state?.running && p;
        });
        const c = after.status!.containerStatuses![0];
        assert.match(c.lastState?.terminated?.message ?? "", /spot interruption/);
        const tasks = (await nodeTasks(moto, nodeName)).filter((x) =>
          tag(x, "vkubelet.io/uid") === pod.metadata?.uid && x.lastStatus === "RUNNING"
        );
        assert.equal(tasks.length, 1);
        assert.notEqual(tasks[0].taskArn, before.taskArn);
        // --previous reads the stream of the task before the restart.
        const previousStream = `vk/main/${before.taskArn!.split("/").at(-1)}`;
        await moto.logs.send(
          new CreateLogStreamCommand({
            logGroupName: "/vkubelet/test",
            logStreamName: previousStream,
          }),
        );
        await moto.logs.send(
          new PutLogEventsCommand({
            logGroupName: "/vkubelet/test",
            logStreamName: previousStream,
            logEvents: [{ message: "from the first task", timestamp: Date.now() }],
          }),
        );
        assert.equal(
          await kubectl(["logs", pod.metadata!.name!, "--previous"]),
          "from the first task\n",
        );
        assert.equal(
          await kubectl(["logs", pod.metadata!.name!]),
          "",
          "the new task wrote nothing",
        );
        assert.equal(
          after.status?.podIP,
          tasks[0].attachments?.[0]?.details?.find((d) => d.name === "privateIPv4Address")?.value,
        );
      },
    );

    await t.step(
      "restartPolicy Never: a stopped task ends the pod, with ECS's reason",
      async () => {
        await kubectl(
          ["apply", "-f", "-"],
          JSON.stringify({
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name: "once", labels: { app: "once" } },
            spec: {
              ...placement,
              restartPolicy: "Never",
              containers: [{ name: "main", image: "busybox", command: ["true"] }],
            },
          }),
        );
        const pod = await eventually("pod once Running", async () => {
          const [p] = await pods("app=once");
          return p?.status?.phase === "Running" && p;
        });
        const task = (await nodeTasks(moto, nodeName)).find((x) =>
          tag(x, "vkubelet.io/uid") === pod.metadata?.uid
        )!;
        await moto.ecs.send(
          new StopTaskCommand({
            cluster: moto.cluster,
            task: task.taskArn,
            reason: "essential container exited",
          }),
        );
        const done = await eventually("pod once Succeeded", async () => {
          const [p] = await pods("app=once");
          return p?.status?.phase === "Succeeded" && p;
        });
        const terminated = done.status?.containerStatuses?.[0]?.state?.terminated;
        assert.equal(terminated?.exitCode, 0);
        assert.match(terminated?.message ?? "", /essential container exited/);
        const runningForIt = (await nodeTasks(moto, nodeName)).filter((x) =>
          tag(x, "vkubelet.io/uid") === pod.metadata?.uid && x.lastStatus === "RUNNING"
        );
        assert.equal(runningForIt.length, 0, "no new task for a pod that must not restart");
      },
    );

    await t.step(
      "a pod Fargate cannot run fails with ProviderFailed naming the field",
      async () => {
        await kubectl(
          ["apply", "-f", "-"],
          JSON.stringify({
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name: "hostpath", labels: { app: "hostpath" } },
            spec: {
              ...placement,
              containers: [{ name: "main", image: "busybox" }],
              volumes: [{ name: "h", hostPath: { path: "/etc" } }],
            },
          }),
        );
        const failed = await eventually("pod hostpath to fail", async () => {
          const [p] = await pods("app=hostpath");
          return p?.status?.reason === "ProviderFailed" && p;
        });
        assert.match(failed.status?.message ?? "", /spec\.volumes\[0\]\.hostPath/);
      },
    );

    await t.step("a restarted vkubelet adopts its tasks and starts none twice", async () => {
      const runningArns = async () =>
        (await nodeTasks(moto, nodeName)).filter((x) => x.lastStatus === "RUNNING")
          .map((x) => x.taskArn).sort();
      const before = await runningArns();
      assert.equal(before.length, 5);
      await node.stop();
      node = await startVkubelet(cluster, {
        nodeName,
        provider: "fargate",
        like: node,
        env: MOTO_ENV,
      });
      // Several status rounds and a resync of every pod.
      await new Promise((r) => setTimeout(r, 4000));
      assert.deepEqual(await runningArns(), before);
      const running = await pods();
      assert.equal(running.length, 5);
      assert.ok(running.every((p) => p.status?.phase === "Running"));
    });

    await t.step("scale to 0: tasks stopped, task definitions deregistered", async () => {
      const tasks = (await nodeTasks(moto, nodeName)).filter((x) =>
        x.lastStatus === "RUNNING" && tag(x, "vkubelet.io/pod")?.startsWith("web-")
      );
      assert.equal(tasks.length, 5);
      await kubectl(["scale", "deployment/web", "--replicas=0"]);
      await eventually("no web pods left", async () => (await pods()).length === 0, 90_000);
      await eventually("every web task stopped", async () => {
        const now = await nodeTasks(moto, nodeName);
        return tasks.every((x) =>
          now.find((y) => y.taskArn === x.taskArn)?.lastStatus === "STOPPED"
        );
      });
      for (const task of tasks) {
        const def = await moto.ecs.send(
          new DescribeTaskDefinitionCommand({ taskDefinition: task.taskDefinitionArn }),
        );
        assert.equal(
          def.taskDefinition?.status,
          "INACTIVE",
          `${task.taskDefinitionArn} deregistered`,
        );
      }
    });
  } finally {
    await node.stop();
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    await moto.stop();
  }
});
