/**
 * The kubernetes provider with two real control planes (issue 11's "What must show"): a
 * Deployment in A runs in B with matching status; scale and delete propagate and leave nothing
 * in B; a ConfigMap volume and a Secret env var work in B and a ConfigMap change reaches B;
 * `kubectl logs -f` and `kubectl exec` reach the process in B; B's apiserver going away marks
 * the virtual node unreachable (Ready within `--provider-outage-grace`) and its return reachable,
 * with no pod lost or duplicated.
 * Prints the added latency from pod creation to Running, against creating the pod in B directly.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { nodeReady } from "../../../tools/cluster/vkubelet.ts";
import { type TwoClusters, twoClusters } from "./_setup.ts";
import { eventually } from "../../../tools/harness/wait.ts";

const TICKER =
  'echo "started $HOSTNAME"; i=0; while true; do echo "tick $i"; i=$((i+1)); sleep 1; done';

function deployment(env: TwoClusters, replicas: number) {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: env.namespaceA },
    spec: {
      replicas,
      selector: { matchLabels: { app: "web" } },
      template: {
        metadata: { labels: { app: "web" } },
        spec: {
          ...env.placement,
          terminationGracePeriodSeconds: 2,
          containers: [{
            name: "main",
            image: "busybox",
            command: ["sh", "-c", TICKER],
            env: [{
              name: "PASSWORD",
              valueFrom: { secretKeyRef: { name: "creds", key: "password" } },
            }],
            volumeMounts: [{ name: "config", mountPath: "/etc/config" }],
          }],
          volumes: [{ name: "config", configMap: { name: "settings" } }],
        },
      },
    },
  };
}

async function podsIn(env: TwoClusters, where: "a" | "b"): Promise<Pod[]> {
  if (where === "a") {
    const list = await env.adminA.pods.list({
      namespace: env.namespaceA,
      labelSelector: "app=web",
    });
    return list.items.filter((p) => !p.metadata?.deletionTimestamp);
  }
  const list = await env.adminB.pods.list({ namespace: env.namespaceB, labelSelector: "app=web" });
  return list.items;
}

function running(pods: Pod[]): boolean {
  return pods.every((p) =>
    p.status?.phase === "Running" && p.status.containerStatuses?.every((c) => c.ready)
  );
}

Deno.test("kubernetes provider: pods of a Deployment in A run in B and follow it", async (t) => {
  const env = await twoClusters();
  const kubectlA = env.a.kubectlIn(env.namespaceA);
  try {
    await kubectlA(["create", "configmap", "settings", "--from-literal=key=v1"]);
    await kubectlA(["create", "secret", "generic", "creds", "--from-literal=password=s3cret"]);
    await kubectlA(["apply", "-f", "-"], JSON.stringify(deployment(env, 2)));

    await t.step("the pods run in B and their status in A matches B", async () => {
      await kubectlA(["rollout", "status", "deployment/web", "--timeout=90s"]);
      const [inA, inB] = await eventually("two Running pods in A and in B", async () => {
        const a = await podsIn(env, "a"), b = await podsIn(env, "b");
        return a.length === 2 && b.length === 2 && running(a) && running(b) && [a, b];
      });
      for (const up of inA) {
        assert.equal(up.spec?.nodeName, env.virtualNode.nodeName);
        const down = inB.find((p) =>
          p.metadata?.labels?.["vkubelet.io/upstream-uid"] === up.metadata?.uid
        );
        assert.ok(down, `no pod in B for ${up.metadata?.name}`);
        assert.equal(down.metadata?.name, `${env.namespaceA}.${up.metadata?.name}`);
        assert.equal(down.spec?.nodeName, env.nodeB.nodeName);
        assert.equal(up.status?.podIP, down.status?.podIP);
        assert.equal(up.status?.phase, down.status?.phase);
        assert.deepEqual(
          up.status?.containerStatuses?.map((
            c,
          ) => [c.name, c.ready, c.restartCount, c.containerID]),
          down.status?.containerStatuses?.map((
            c,
          ) => [c.name, c.ready, c.restartCount, c.containerID]),
        );
      }
    });

    const podName = (await podsIn(env, "a"))[0].metadata!.name!;

    await t.step(
      "kubectl exec in A reaches the process in B: ConfigMap volume and Secret env",
      async () => {
        assert.equal(
          (await kubectlA(["exec", podName, "--", "cat", "/etc/config/key"])).trim(),
          "v1",
        );
        assert.equal(
          (await kubectlA(["exec", podName, "--", "sh", "-c", "echo $PASSWORD"])).trim(),
          "s3cret",
        );
        const failed = await env.a.kubectl([
          "-n",
          env.namespaceA,
          "exec",
          podName,
          "--",
          "sh",
          "-c",
          "exit 3",
        ]);
        assert.equal(failed.code, 3, failed.stderr);
      },
    );

    await t.step("a ConfigMap change in A reaches B", async () => {
      await kubectlA(["patch", "configmap", "settings", "-p", '{"data":{"key":"v2"}}']);
      await eventually("the copy in B to say v2", async () => {
        const copy = await env.adminB.configMaps.get(env.namespaceB, `${env.namespaceA}.settings`);
        return copy.data?.key === "v2";
      }, 30_000);
      await eventually(
        "the file in the pod to say v2",
        async () =>
          (await kubectlA(["exec", podName, "--", "cat", "/etc/config/key"])).trim() === "v2",
        90_000,
      );
    });

    await t.step("kubectl logs -f in A follows the log in B", async () => {
      const res = await env.a.kubectl(["-n", env.namespaceA, "logs", "-f", podName], {
        signal: AbortSignal.timeout(4_000),
      });
      const ticks = res.stdout.split("\n").filter((l) => l.startsWith("tick "));
      assert.ok(res.stdout.includes("started"), res.stdout + res.stderr);
      assert.ok(ticks.length >= 3, `followed only ${ticks.length} ticks:\n${res.stdout}`);
    });

    await t.step(
      "B's apiserver away: the virtual node is marked unreachable, stays Ready, nothing lost or duplicated",
      async () => {
        const before = (await podsIn(env, "b")).map((p) => p.metadata!.uid!).sort();
        const beforeA = (await podsIn(env, "a")).map((p) => p.metadata!.uid!).sort();
        await env.b.stopApiserver();
        let restarted = false;
        try {
          await eventually(
            "the virtual node to be marked unreachable",
            async () => (await reachable(env, env.virtualNode.nodeName)) === "False",
            90_000,
          );
          // Within the grace (30 m by default) the node stays Ready: nothing is evicted.
          assert.equal(await nodeReady(env.a, env.virtualNode.nodeName), "True");
        } finally {
          await env.b.startApiserver();
          restarted = true;
        }
        assert.ok(restarted);
        await eventually(
          "the virtual node to be reachable again",
          async () => (await reachable(env, env.virtualNode.nodeName)) === "True",
          90_000,
        );
        assert.equal(await nodeReady(env.a, env.virtualNode.nodeName), "True");
        const after = await eventually("two Running pods in B", async () => {
          const b = await podsIn(env, "b");
          return b.length === 2 && running(b) && b;
        });
        assert.deepEqual(after.map((p) => p.metadata!.uid!).sort(), before);
        assert.deepEqual((await podsIn(env, "a")).map((p) => p.metadata!.uid!).sort(), beforeA);
        await eventually("Running pods in A", async () => running(await podsIn(env, "a")));
      },
    );

    await t.step("scale and delete propagate; nothing is left in B", async () => {
      await kubectlA(["scale", "deployment/web", "--replicas=3"]);
      await eventually("three Running pods in B", async () => {
        const b = await podsIn(env, "b");
        return b.length === 3 && running(b);
      }, 90_000);
      await kubectlA(["scale", "deployment/web", "--replicas=1"]);
      await eventually("one pod in B", async () => (await podsIn(env, "b")).length === 1, 90_000);
      await kubectlA(["delete", "deployment/web"]);
      await eventually(
        "no pod in A or B",
        async () => (await podsIn(env, "a")).length === 0 && (await podsIn(env, "b")).length === 0,
        90_000,
      );
      await eventually("no copied ConfigMap or Secret in B", async () => {
        const selector = `vkubelet.io/virtual-node=${env.virtualNode.nodeName}`;
        const cms = await env.adminB.configMaps.list({
          namespace: env.namespaceB,
          labelSelector: selector,
        });
        const secrets = await env.adminB.secrets.list({
          namespace: env.namespaceB,
          labelSelector: selector,
        });
        return cms.items.length === 0 && secrets.items.length === 0;
      }, 30_000);
      const all = await env.adminB.pods.list({ namespace: env.namespaceB });
      assert.equal(all.items.length, 0);
    });

    await t.step(
      "latency: creation in A to Running, against the same pod created in B",
      async () => {
        const viaA: number[] = [], direct: number[] = [];
        for (let i = 0; i < 5; i++) {
          viaA.push(await timeToRunning(env, "a", i));
          direct.push(await timeToRunning(env, "b", i));
        }
        const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[2];
        console.log(
          `kubernetes provider latency, creation to Running (median of 5): via A ${
            median(viaA)
          } ms, ` +
            `directly in B ${median(direct)} ms, added ${median(viaA) - median(direct)} ms ` +
            `(via A ${viaA.join(", ")}; direct ${direct.join(", ")})`,
        );
      },
    );
  } finally {
    await env.a.kubectl(["delete", "namespace", env.namespaceA, "--wait=false"]);
    await env.close();
  }
});

async function timeToRunning(env: TwoClusters, where: "a" | "b", i: number): Promise<number> {
  const name = `lat-${where}-${i}`;
  const client = where === "a" ? env.adminA : env.adminB;
  const namespace = where === "a" ? env.namespaceA : env.namespaceB;
  const spec = where === "a" ? env.placement : {
    nodeSelector: { "kubernetes.io/hostname": env.nodeB.nodeName },
    tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
  };
  const pod: Pod = {
    metadata: { name, namespace },
    spec: {
      ...spec,
      terminationGracePeriodSeconds: 0,
      containers: [{ name: "main", image: "busybox", command: ["sleep", "3600"] }],
    } as Pod["spec"],
  };
  const started = performance.now();
  await client.pods.create(namespace, pod);
  await eventually(
    `${name} Running`,
    async () => (await client.pods.get(namespace, name)).status?.phase === "Running",
    60_000,
  );
  const ms = Math.round(performance.now() - started);
  await client.pods.delete(namespace, name, { gracePeriodSeconds: where === "a" ? 0 : 0 });
  return ms;
}

/** The virtual node's `ProviderReachable` condition status, as cluster A has it. */
async function reachable(env: TwoClusters, nodeName: string): Promise<string | undefined> {
  const res = await env.a.kubectl([
    "get",
    "node",
    nodeName,
    "-o",
    'jsonpath={.status.conditions[?(@.type=="ProviderReachable")].status}',
  ]);
  return res.code === 0 ? res.stdout.trim() || undefined : undefined;
}
