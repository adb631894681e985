import assert from "node:assert/strict";
import type { Node, Pod } from "kubernetes-types/core/v1.d.ts";
import { fitOnSomeNode } from "../../../providers/kubernetes/node/fit.ts";
import { UnschedulableWatch } from "../../../providers/kubernetes/status/unschedulable.ts";
import { FakeClock } from "../../fakes/clock.ts";

function node(name: string, cpu: string, extra: Partial<Node> = {}): Node {
  return {
    metadata: { name, labels: { zone: name } },
    spec: extra.spec,
    status: {
      allocatable: { cpu, memory: "4Gi", pods: "10" },
      conditions: [{ type: "Ready", status: "True" }],
    },
  };
}

function pod(cpu: string, spec: Partial<Pod["spec"]> = {}, nodeName?: string): Pod {
  return {
    metadata: { name: `p-${cpu}-${nodeName ?? ""}`, namespace: "b" },
    spec: {
      nodeName,
      containers: [{ name: "c", resources: { requests: { cpu } } }],
      ...spec,
    },
    status: { phase: nodeName ? "Running" : "Pending" },
  };
}

Deno.test("fit: a pod fitting the sum but no single node is refused with the scheduler's words", () => {
  const nodes = [node("a", "2"), node("b", "2")];
  const fit = fitOnSomeNode(pod("3"), nodes, []);
  assert.deepEqual(fit, {
    ok: false,
    message: "0/2 nodes of the downstream cluster are available: 2 Insufficient cpu",
  });
  assert.deepEqual(fitOnSomeNode(pod("1500m"), nodes, [pod("1", {}, "a")]), {
    ok: true,
    node: "b",
  });
});

Deno.test("fit: nodeSelector, required node affinity and taints are checked per node", () => {
  const tainted = node("b", "4", {
    spec: { taints: [{ key: "gpu", value: "yes", effect: "NoSchedule" }] },
  });
  const nodes = [node("a", "4"), tainted];
  const onB = { nodeSelector: { zone: "b" } };
  assert.match(
    (fitOnSomeNode(pod("1", onB), nodes, []) as { message: string }).message,
    /1 node\(s\) didn't match Pod's node affinity\/selector, 1 node\(s\) had untolerated taint \{gpu: yes\}/,
  );
  const tolerated = { ...onB, tolerations: [{ key: "gpu", operator: "Exists" as const }] };
  assert.equal(fitOnSomeNode(pod("1", tolerated), nodes, []).ok, true);
  const affinity = {
    affinity: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{
            matchExpressions: [{ key: "zone", operator: "NotIn", values: ["a"] }],
          }],
        },
      },
    },
  };
  assert.equal(fitOnSomeNode(pod("1", affinity), nodes, []).ok, false);
  assert.equal(fitOnSomeNode(pod("1", { ...affinity, ...tolerated }), nodes, []).ok, true);
});

Deno.test("a pod unschedulable in B past the timeout is failed once, with B's reason", async () => {
  const clock = new FakeClock();
  const failed: string[] = [];
  const watch = new UnschedulableWatch({
    timeoutMs: 60_000,
    clock,
    fail: (_p, message) => failed.push(message),
  });
  const stuck: Pod = {
    metadata: { uid: "u1", name: "x" },
    status: {
      phase: "Pending",
      conditions: [{
        type: "PodScheduled",
        status: "False",
        reason: "Unschedulable",
        message: "0/1 nodes are available: 1 Insufficient cpu.",
      }],
    },
  };
  watch.observe(stuck);
  await clock.advance(59_000);
  watch.check();
  assert.deepEqual(failed, []);
  await clock.advance(1_000);
  watch.check();
  watch.observe(stuck);
  await clock.advance(120_000);
  watch.check();
  assert.equal(failed.length, 1);
  assert.match(failed[0], /more than 60 s .*: 0\/1 nodes are available: 1 Insufficient cpu\./);
});
