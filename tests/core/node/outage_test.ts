/**
 * A provider outage on the node side, with a fake provider, API and clock: within
 * `--provider-outage-grace` the node stays Ready and its lease renewed, with
 * `ProviderReachable=False`, the unreachable taint (or a cordon under NodeRestriction) and an
 * event; past the grace Ready turns False and the lease stops; on recovery all of it is undone.
 */
import assert from "node:assert/strict";
import type { Node } from "kubernetes-types/core/v1.d.ts";
import {
  OUTAGE_CORDON_ANNOTATION,
  PING_FAILED_REASON,
  PROVIDER_REACHABLE,
  UNREACHABLE_TAINT,
} from "../../../core/node/mod.ts";
import { FakeNodeApi } from "./fakes.ts";
import { advanceBy, startNodeSide } from "./_harness.ts";
import { FakeClock } from "../../fakes/clock.ts";
import { backendUnreachable } from "../../../provider/mod.ts";

const condition = (node: Node | undefined, type: string) =>
  node?.status?.conditions?.find((c) => c.type === type);
const tainted = (node: Node | undefined) =>
  (node?.spec?.taints ?? []).some((t) => t.key === UNREACHABLE_TAINT.key);

const GRACE = 60_000;

Deno.test("an outage within the grace keeps the node Ready and its lease, tainted and marked; past it Ready is False; recovery undoes it", async () => {
  const side = await startNodeSide({
    node: { outageGraceMs: GRACE },
    lease: { random: () => 0.5, outageGraceMs: GRACE },
  });
  try {
    await advanceBy(side.clock, 10_000, 500);
    assert.equal(condition(side.api.node, PROVIDER_REACHABLE)?.status, "True");
    assert.ok(!tainted(side.api.node));
    assert.equal(side.api.events.length, 0, "no event while the provider is reachable");

    const began = side.clock.now();
    side.provider.pingError = new Error("GET https://interlink.example:3000/pinglink: refused");
    await advanceBy(side.clock, 20_000, 500);
    const node = side.api.node;
    assert.equal(condition(node, "Ready")?.status, "True", "Ready within the grace");
    const reachable = condition(node, PROVIDER_REACHABLE)!;
    assert.equal(reachable.status, "False");
    assert.equal(reachable.reason, "ProviderPingFailed");
    assert.match(reachable.message!, /interlink\.example:3000\/pinglink: refused/);
    assert.ok(tainted(node), "the unreachable taint keeps new pods away");
    assert.deepEqual(
      node?.spec?.taints?.find((t) => t.key === UNREACHABLE_TAINT.key)?.effect,
      "NoSchedule",
    );
    assert.ok(
      node?.spec?.taints?.some((t) => t.key === "virtual-kubelet.io/provider"),
      "the provider taint stays",
    );
    assert.deepEqual(side.api.events.map((e) => [e.type, e.reason]), [
      ["Warning", "ProviderUnreachable"],
    ]);
    assert.match(side.api.events[0].message, /refused.*NotReady if this lasts 1m/);
    const renewTime = Date.parse(side.api.lease!.spec!.renewTime!);
    assert.ok(renewTime > began + 10_000, "the lease is renewed within the grace");

    // Past the grace: Ready False as without one, and the lease stops.
    await advanceBy(side.clock, GRACE, 1_000);
    const ready = condition(side.api.node, "Ready")!;
    assert.equal(ready.status, "False");
    assert.equal(ready.reason, PING_FAILED_REASON);
    assert.match(ready.message!, /longer than --provider-outage-grace 1m/);
    const renewals = side.api.count("updateLease");
    await advanceBy(side.clock, 30_000, 1_000);
    assert.equal(side.api.count("updateLease"), renewals, "the lease was renewed past the grace");
    assert.ok(tainted(side.api.node));

    side.provider.pingError = undefined;
    await advanceBy(side.clock, 11_000, 500);
    assert.equal(condition(side.api.node, "Ready")?.status, "True");
    assert.equal(condition(side.api.node, PROVIDER_REACHABLE)?.status, "True");
    assert.ok(!tainted(side.api.node), "the taint is removed on recovery");
    assert.ok(side.api.count("updateLease") > renewals);
    assert.deepEqual(side.api.events.map((e) => e.reason), [
      "ProviderUnreachable",
      "ProviderReachable",
    ]);
    assert.match(side.api.events[1].message, /again after 1m5\ds|again after 1m\d+s/);
  } finally {
    await side.stop();
  }
});

Deno.test("a short outage never turns Ready False nor stops the lease", async () => {
  const side = await startNodeSide({
    node: { outageGraceMs: GRACE },
    lease: { random: () => 0.5, outageGraceMs: GRACE },
  });
  try {
    await advanceBy(side.clock, 10_000, 500);
    const statuses: string[] = [];
    side.provider.pingError = new Error("down");
    for (let t = 0; t < 40_000; t += 1_000) {
      await side.clock.advance(1_000);
      statuses.push(condition(side.api.node, "Ready")!.status);
    }
    const lastRenewal = Date.parse(side.api.lease!.spec!.renewTime!);
    assert.ok(side.clock.now() - lastRenewal <= 11_000, "the lease went stale in the outage");
    side.provider.pingError = undefined;
    await advanceBy(side.clock, 11_000, 500);
    assert.ok(statuses.every((s) => s === "True"), `Ready was ${statuses.join(",")}`);
    assert.ok(!tainted(side.api.node));
    assert.equal(condition(side.api.node, PROVIDER_REACHABLE)?.status, "True");
  } finally {
    await side.stop();
  }
});

Deno.test("grace 0 is today's behaviour: Ready False at the first failed ping, still marked", async () => {
  const side = await startNodeSide({ lease: { random: () => 0.5 } });
  try {
    side.provider.pingError = new Error("down");
    await advanceBy(side.clock, 10_000, 500);
    assert.equal(condition(side.api.node, "Ready")?.status, "False");
    assert.doesNotMatch(condition(side.api.node, "Ready")!.message!, /grace/);
    assert.equal(condition(side.api.node, PROVIDER_REACHABLE)?.status, "False");
    assert.ok(tainted(side.api.node));
    assert.match(side.api.events[0].message, /NotReady \(--provider-outage-grace=0\)/);
  } finally {
    await side.stop();
  }
});

Deno.test("under NodeRestriction the node is cordoned instead of tainted, and uncordoned on recovery", async () => {
  const clock = new FakeClock();
  const api = new FakeNodeApi(() => clock.now());
  api.restrictTaints = true;
  const side = await startNodeSide({ clock, api, node: { outageGraceMs: GRACE } });
  try {
    side.provider.pingError = new Error("down");
    await advanceBy(side.clock, 20_000, 500);
    assert.ok(!tainted(side.api.node));
    assert.equal(side.api.node?.spec?.unschedulable, true);
    // The annotation says when: the first sync after the ping failed.
    assert.match(
      side.api.node?.metadata?.annotations?.[OUTAGE_CORDON_ANNOTATION] ?? "",
      /^2026-01-01T00:00:\d\d\.\d{3}Z$/,
    );
    assert.ok(side.records.some((r) => /may not change its own taints/.test(r.message)));

    side.provider.pingError = undefined;
    await advanceBy(side.clock, 11_000, 500);
    assert.equal(side.api.node?.spec?.unschedulable, undefined);
    assert.equal(side.api.node?.metadata?.annotations?.[OUTAGE_CORDON_ANNOTATION], undefined);
  } finally {
    await side.stop();
  }
});

Deno.test("an admin's cordon is neither taken for the outage's nor undone after it", async () => {
  const clock = new FakeClock();
  const api = new FakeNodeApi(() => clock.now());
  api.restrictTaints = true;
  const side = await startNodeSide({ clock, api, node: { outageGraceMs: GRACE } });
  try {
    await advanceBy(side.clock, 10_000, 500);
    await api.patchNode("vk-test", { spec: { unschedulable: true } });
    side.provider.pingError = new Error("down");
    await advanceBy(side.clock, 20_000, 500);
    side.provider.pingError = undefined;
    await advanceBy(side.clock, 20_000, 500);
    assert.equal(side.api.node?.spec?.unschedulable, true, "the admin's cordon was undone");
    assert.equal(side.api.node?.metadata?.annotations?.[OUTAGE_CORDON_ANNOTATION], undefined);
  } finally {
    await side.stop();
  }
});

Deno.test("a cordon an admin wrote again during the outage (uncordon, then cordon or drain) is left after it", async () => {
  const clock = new FakeClock();
  const api = new FakeNodeApi(() => clock.now());
  api.restrictTaints = true;
  const side = await startNodeSide({ clock, api, node: { outageGraceMs: GRACE } });
  try {
    side.provider.pingError = new Error("down");
    await advanceBy(side.clock, 20_000, 500);
    assert.equal(api.node?.spec?.unschedulable, true, "not cordoned for the outage");
    // `kubectl uncordon`, then `kubectl drain`: the cordon is the admin's now.
    await api.patchAs("kubectl", { spec: { unschedulable: null } });
    await advanceBy(side.clock, 10_000, 500);
    await api.patchAs("kubectl", { spec: { unschedulable: true } });
    side.provider.pingError = undefined;
    await advanceBy(side.clock, 20_000, 500);
    assert.equal(api.node?.spec?.unschedulable, true, "the admin's drain was undone");
    assert.equal(api.node?.metadata?.annotations?.[OUTAGE_CORDON_ANNOTATION], undefined);
    assert.ok(side.records.some((r) => /stays cordoned after the outage/.test(r.message)));
  } finally {
    await side.stop();
  }
});

Deno.test("the provider's own reason and message reach ProviderReachable", async () => {
  const side = await startNodeSide({ node: { outageGraceMs: GRACE } });
  try {
    side.provider.pingError = backendUnreachable(
      "slurmctld via ssh to hpc@login.example",
      new Error("exit 255: Connection timed out"),
      { reason: "SlurmUnreachable" },
    );
    await advanceBy(side.clock, 11_000, 500);
    const reachable = condition(side.api.node, PROVIDER_REACHABLE)!;
    assert.equal(reachable.reason, "SlurmUnreachable");
    assert.match(
      reachable.message!,
      /cannot reach slurmctld via ssh to hpc@login\.example: exit 255/,
    );
  } finally {
    await side.stop();
  }
});
