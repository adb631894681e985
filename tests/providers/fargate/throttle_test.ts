/**
 * ECS throttling: DescribeTasks goes in batches of 100, and a ThrottlingException (past the SDK's
 * own attempts) makes every call wait a jittered, growing delay or the answer's retry hint,
 * then try again — against moto behind a proxy that throttles the first DescribeTasks calls as
 * ECS does (HTTP 400, `__type: ThrottlingException`).
 */
import assert from "node:assert/strict";
import { ECSClient, RegisterTaskDefinitionCommand, RunTaskCommand } from "@aws-sdk/client-ecs";
import type { AwsClients } from "../../../providers/fargate/client/aws.ts";
import { EcsTasks } from "../../../providers/fargate/client/tasks.ts";
import { isThrottled, Throttle } from "../../../providers/fargate/client/throttle.ts";
import { parseFargateConfig } from "../../../providers/fargate/config.ts";
import { startMoto } from "./_moto.ts";

/** An error as the SDK throws for a throttled call. */
const throttled = (headers: Record<string, string> = {}) =>
  Object.assign(new Error("Rate exceeded"), {
    name: "ThrottlingException",
    $metadata: {},
    $response: { headers },
  });

Deno.test("a throttled call waits a jittered, growing delay, or the retry hint when longer", async () => {
  const waits: number[] = [];
  const throttle = new Throttle({
    baseMs: 100,
    random: () => 0.5,
    sleep: (ms) => (waits.push(Math.round(ms / 10) * 10), Promise.resolve()),
  });
  let calls = 0;
  const out = await throttle.run(() => {
    calls++;
    if (calls === 1) return Promise.reject(throttled());
    if (calls === 2) return Promise.reject(throttled());
    if (calls === 3) return Promise.reject(throttled({ "retry-after": "3" }));
    return Promise.resolve("done");
  });
  assert.equal(out, "done");
  assert.equal(throttle.throttled, 3);
  // Half of 100, 200, then the hint's 3 s over half of 400.
  assert.ok(waits[0] <= 60 && waits[0] >= 40, `first wait ${waits[0]}`);
  assert.ok(waits[1] <= 110 && waits[1] >= 90, `second wait ${waits[1]}`);
  assert.ok(waits[2] >= 2990, `the hint is honoured: ${waits[2]}`);
  await assert.rejects(
    throttle.run(() => Promise.reject(new Error("other"))),
    /other/,
    "other errors are not retried",
  );
  assert.equal(isThrottled(new Error("x")), false);
});

Deno.test("a call throttled more often than its attempts fails with the throttling error", async () => {
  const throttle = new Throttle({ attempts: 3, sleep: () => Promise.resolve() });
  let calls = 0;
  await assert.rejects(
    throttle.run(() => (calls++, Promise.reject(throttled()))),
    (err: Error) => err.name === "ThrottlingException",
  );
  assert.equal(calls, 3);
});

Deno.test("DescribeTasks against moto: 100 tasks a call, backing off while throttled", async () => {
  const moto = await startMoto();
  let describes = 0, throttledAnswers = 0;
  const throttleFirst = 3;
  const times: number[] = [];
  const proxy = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const target = req.headers.get("x-amz-target") ?? "";
    if (target.endsWith(".DescribeTasks")) {
      times.push(Date.now());
      if (throttledAnswers < throttleFirst) {
        throttledAnswers++;
        await req.body?.cancel();
        return new Response(
          JSON.stringify({ __type: "ThrottlingException", message: "Rate exceeded" }),
          {
            status: 400,
            headers: { "content-type": "application/x-amz-json-1.1", "retry-after": "1" },
          },
        );
      }
      describes++;
    }
    const url = new URL(req.url);
    const headers = new Headers(req.headers);
    headers.delete("host");
    const answer = await fetch(`${moto.endpoint}${url.pathname}${url.search}`, {
      method: req.method,
      headers,
      body: req.body ? await req.arrayBuffer() : undefined,
    });
    return new Response(answer.body, { status: answer.status, headers: answer.headers });
  });
  const endpoint = `http://127.0.0.1:${proxy.addr.port}`;
  const parsed = parseFargateConfig({
    region: moto.region,
    endpoint,
    cluster: moto.cluster,
    subnets: [moto.subnet],
    executionRoleArn: "arn:aws:iam::123456789012:role/exec",
  });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  // One SDK attempt: the provider's own back-off is what is tested.
  const ecsClient = new ECSClient({
    region: moto.region,
    endpoint,
    maxAttempts: 1,
    credentials: { accessKeyId: "testing", secretAccessKey: "testing" },
  });
  try {
    const def = await moto.ecs.send(
      new RegisterTaskDefinitionCommand({
        family: "throttle",
        requiresCompatibilities: ["FARGATE"],
        networkMode: "awsvpc",
        cpu: "256",
        memory: "512",
        containerDefinitions: [{ name: "main", image: "busybox", memory: 512 }],
      }),
    );
    const arns: string[] = [];
    for (let i = 0; i < 15; i++) {
      const out = await moto.ecs.send(
        new RunTaskCommand({
          cluster: moto.cluster,
          taskDefinition: def.taskDefinition?.taskDefinitionArn,
          launchType: "FARGATE",
          count: 10,
          networkConfiguration: {
            awsvpcConfiguration: { subnets: [moto.subnet], securityGroups: [moto.securityGroup] },
          },
        }),
      );
      arns.push(...(out.tasks ?? []).map((x) => x.taskArn!));
    }
    const ecs = new EcsTasks({ ecs: ecsClient } as AwsClients, parsed.config);
    const started = Date.now();
    const found = await ecs.describe(arns);
    assert.equal(found.size, 150);
    assert.equal(describes, 2, "150 tasks in two calls that reached ECS");
    assert.equal(ecs.throttle.throttled, 3);
    for (let i = 1; i <= throttleFirst; i++) {
      assert.ok(times[i] - times[i - 1] >= 990, `waited the 1 s hint before retry ${i}`);
    }
    assert.ok(Date.now() - started < 15_000);
  } finally {
    ecsClient.destroy();
    await proxy.shutdown();
    await moto.stop();
  }
});
