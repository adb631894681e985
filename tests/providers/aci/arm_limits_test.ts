/**
 * The aci provider stays inside Azure Resource Manager's read limits: its read budget (a token
 * bucket below ARM's, that waits out `Retry-After` and keeps the subscription's remaining reads
 * above a reserve), its read schedule (groups that can change every round, steady ones less
 * often), and the emulator's enforcement of ARM's documented buckets (429 + Retry-After + the
 * remaining-reads header, through Prism) with the provider reading within them.
 */
import assert from "node:assert/strict";
import type { ContainerGroup } from "@azure/arm-containerinstance";
import { ArmReadBudget } from "../../../providers/aci/client/read_budget.ts";
import { isSteady, ReadSchedule } from "../../../providers/aci/client/read_schedule.ts";
import { ArmLimits } from "../../../tools/harness/aci/arm_limits.ts";
import { aciPod, startProviderOnAci, SUBSCRIPTION, until } from "../../../tools/harness/aci/env.ts";

const call = () => ({ signal: AbortSignal.timeout(30_000) });

Deno.test("the read budget lets a burst through, then reads at its rate", () => {
  let now = 0;
  const budget = new ArmReadBudget({ perSecond: 10, burst: 3, now: () => now });
  for (let i = 0; i < 3; i++) {
    assert.equal(budget.waitMs(), 0);
    void budget.take();
  }
  assert.equal(Math.round(budget.waitMs()), 100, "one token a tenth of a second");
  now += 100;
  assert.equal(budget.waitMs(), 0);
});

Deno.test("the read budget keeps the subscription's reserve and waits out a 429", () => {
  let now = 0;
  const budget = new ArmReadBudget({ perSecond: 10, burst: 100, reserve: 10, now: () => now });
  budget.observeRemaining(8); // other clients left ARM 8 tokens: below the reserve
  assert.equal(Math.round(budget.waitMs()), 300, "waits until 1 token is over the reserve");
  now += 1000;
  budget.pause(5000);
  assert.equal(budget.waitMs(), 5000, "no read before Retry-After");
  assert.equal(budget.counts.throttled, 1);
});

const group = (state: string, provisioning = "Succeeded", policy = "Always"): ContainerGroup => ({
  provisioningState: provisioning,
  restartPolicy: policy,
  osType: "Linux",
  containers: [{
    name: "main",
    image: "busybox",
    resources: { requests: { cpu: 1, memoryInGB: 1 } },
    instanceView: { currentState: { state } },
  }],
});

Deno.test("groups that can change are read every round, steady ones less often", () => {
  assert.ok(isSteady(group("Running")));
  assert.ok(!isSteady(group("Running", "Creating")), "still provisioning");
  assert.ok(!isSteady(group("Waiting")), "starting");
  assert.ok(!isSteady(group("Terminated")), "restartPolicy Always restarts it");
  assert.ok(isSteady(group("Terminated", "Succeeded", "Never")), "ended for good");
  const schedule = new ReadSchedule({
    statusIntervalMs: 2000,
    steadyIntervalMs: 60_000,
    readsPerSecond: 20,
  });
  schedule.saw("steady", group("Running"), 0);
  schedule.saw("starting", group("Waiting"), 0);
  assert.deepEqual([...schedule.due(["steady", "starting", "new"], 2000)], ["new", "starting"]);
  assert.deepEqual([...schedule.due(["steady"], 59_000)], ["steady"], "in the round nearest 60 s");
  // 2,000 steady groups need 100 reads a second at 60 s; 80% of 20 a second reads each in 125 s.
  for (let i = 0; i < 2000; i++) schedule.saw(`s${i}`, group("Running"), 0);
  assert.equal(schedule.steadyMs(), (2001 * 1000) / 16);
});

Deno.test("the emulator enforces ARM's read bucket: 429, Retry-After, remaining reads", () => {
  const limits = new ArmLimits();
  let last;
  for (let i = 0; i < 250; i++) last = limits.take(SUBSCRIPTION, "GET", 0);
  assert.deepEqual(last, { ok: true, operation: "reads", remaining: 0 });
  assert.deepEqual(limits.take(SUBSCRIPTION, "GET", 0), {
    ok: false,
    operation: "reads",
    remaining: 0,
    retryAfterS: 1,
  });
  assert.equal(limits.take(SUBSCRIPTION, "GET", 40).ok, true, "25 a second come back");
  assert.equal(limits.take(SUBSCRIPTION, "PUT", 40).remaining, 199, "writes count apart");
});

Deno.test("the provider reads a steady group less often, and within ARM's limits", async () => {
  const env = await startProviderOnAci({ statusInterval: "200ms", steadyStatusInterval: "4s" });
  try {
    const pod = aciPod("steady", { containers: [{ name: "main", image: "busybox" }] });
    await env.provider.createPod(pod, call());
    await until(
      "the pod runs",
      () =>
        env.pushed.findLast((p) => p.metadata?.name === "steady")?.status?.phase === "Running" ||
        undefined,
    );
    const gets = () =>
      env.emu.requests.filter((r) => r.startsWith("GET ") && r.includes("/containerGroups/"))
        .length;
    const before = gets();
    await new Promise((r) => setTimeout(r, 3000));
    // Every round (200 ms) would be 15 reads; a steady group is read once in 4 s.
    assert.ok(gets() - before <= 1, `${gets() - before} reads of a steady group in 3 s`);
    const answer = await fetch(
      `${env.prism.url}/subscriptions/${SUBSCRIPTION}/resourceGroups/vk-test/providers/Microsoft.ContainerInstance/containerGroups?api-version=2023-05-01`,
      { headers: { authorization: "Bearer t" } },
    );
    await answer.body?.cancel();
    assert.match(
      answer.headers.get("x-ms-ratelimit-remaining-subscription-reads") ?? "",
      /^\d+$/,
      "the remaining-reads header reaches the client through Prism",
    );
    assert.deepEqual(env.emu.armLimits?.refused, { reads: 0, writes: 0, deletes: 0 });
    await env.provider.deletePod(pod, call());
  } finally {
    await env.close();
  }
});

Deno.test("a throttled subscription holds the provider's reads instead of being read again and again", async () => {
  const env = await startProviderOnAci({ statusInterval: "200ms" });
  try {
    // A subscription whose other clients left it 2 reads, refilled at 1 a second.
    env.emu.armLimits = new ArmLimits({
      reads: { size: 2, perSecond: 1 },
      writes: { size: 200, perSecond: 10 },
      deletes: { size: 200, perSecond: 10 },
    });
    const pods = ["a", "b", "c"].map((n) => aciPod(n));
    for (const pod of pods) await env.provider.createPod(pod, call());
    await new Promise((r) => setTimeout(r, 4000));
    const refused = env.emu.armLimits.refused.reads;
    const throttled = env.emu.requests.length;
    // Without the budget each round of 3 reads (and the SDK's retries) is refused again and again:
    // 13 refusals of 27 requests in 4 s, measured with the budget's policy taken out. With it (the
    // remaining-reads reserve and the 429's Retry-After hold, unit-tested above), 4 to 5: the
    // reads in flight when the bucket runs dry, more or fewer with the machine's load.
    assert.ok(refused <= 7, `${refused} reads refused in 4 s (of ${throttled} requests)`);
    env.emu.armLimits = new ArmLimits();
    for (const pod of pods) await env.provider.deletePod(pod, call());
  } finally {
    await env.close();
  }
});
