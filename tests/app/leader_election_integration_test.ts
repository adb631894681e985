/**
 * Two replicas of one virtual node under `--leader-elect` (issue 21), against the real control
 * plane, as the shipped high-availability set runs them: a ServiceAccount bound to the chart's
 * roles for the node (deploy/kubernetes/ha; a node identity may not use any Lease but its node's), the mock provider, 50 pods. The
 * leader is killed (-9), stopped (SIGTERM) and paused (SIGSTOP) in turn; the node stays Ready,
 * no pod restarts or moves, and the measured takeover times are printed for the notes.
 * @module
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { KubeClient } from "../../k8s/mod.ts";
import { type TestCluster, useCluster } from "../../tools/cluster/harness.ts";
import { type RunningVkubelet, startVkubelet } from "../../tools/cluster/vkubelet.ts";
import { freePort } from "../../tools/cluster/ports.ts";
import { eventually } from "../../tools/harness/wait.ts";
import { chartRbac } from "../../tools/helm/manifests.ts";

const PODS = 50;

/**
 * A ServiceAccount in `ns` bound to the chart's high-availability roles for `nodeName` (as in
 * deploy/kubernetes/ha/rbac.yaml); its kubeconfig, and the clean-up commands.
 */
async function serviceAccountKubeconfig(
  cluster: TestCluster,
  ns: string,
  name: string,
  nodeName: string,
) {
  const rbac = await chartRbac({ release: name, namespace: ns, nodeName });
  const applied = await cluster.kubectl(["apply", "-f", "-"], { stdin: rbac.json });
  assert.equal(applied.code, 0, applied.stderr);
  const token = (await cluster.kubectl(["-n", ns, "create", "token", name, "--duration=1h"]))
    .stdout.trim();
  assert.ok(token, "kubectl create token gave a token");
  const ca = btoa(await Deno.readTextFile(`${cluster.pkiDir}/ca.crt`));
  const path = await Deno.makeTempFile({ prefix: "vk-ha-", suffix: ".kubeconfig" });
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{
        name: "c",
        cluster: { server: cluster.server, "certificate-authority-data": ca },
      }],
      users: [{ name: "sa", user: { token } }],
      contexts: [{ name: "c", context: { cluster: "c", user: "sa" } }],
      "current-context": "c",
    }),
  );
  return { path, cleanup: rbac.cleanup };
}

/** What must not change across a takeover, per pod uid. */
function podFacts(pods: Pod[]): Map<string, string> {
  return new Map(pods.map((p) => [
    p.metadata!.uid!,
    JSON.stringify({
      name: p.metadata!.name,
      ip: p.status?.podIP,
      startTime: p.status?.startTime,
      containers: p.status?.containerStatuses?.map((c) => ({
        restarts: c.restartCount,
        startedAt: c.state?.running?.startedAt,
        id: c.containerID,
      })),
    }),
  ]));
}

/** min / median / max of `values`, in seconds. */
function summary(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const s = (ms: number) => (ms / 1000).toFixed(2);
  return `min ${s(sorted[0])} s, median ${s(sorted[Math.floor(sorted.length / 2)])} s, max ${
    s(sorted.at(-1)!)
  } s (n = ${sorted.length}: ${values.map(s).join(", ")})`;
}

/** Successful writes (2xx answers to POST, PUT, PATCH, DELETE) in a replica's /metrics. */
async function successfulWrites(metricsPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  let total = 0;
  for (const line of text.split("\n")) {
    const m = /^vkubelet_kube_api_requests_total\{(.*)\} (\d+)/.exec(line);
    if (!m) continue;
    if (/verb="(POST|PUT|PATCH|DELETE)"/.test(m[1]) && /code="2\d\d"/.test(m[1])) {
      total += Number(m[2]);
    }
  }
  return total;
}

/** Requests other than reads (GET, WATCH) in a replica's /metrics, whatever their answer. */
async function nonReadRequests(metricsPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  let total = 0;
  for (const line of text.split("\n")) {
    const m = /^vkubelet_kube_api_requests_total\{(.*)\} (\d+)/.exec(line);
    if (m && !/verb="(GET|WATCH)"/.test(m[1])) total += Number(m[2]);
  }
  return total;
}

async function healthz(metricsPort: number): Promise<string> {
  return (await (await fetch(`http://127.0.0.1:${metricsPort}/healthz`)).text()).trim();
}

Deno.test("two replicas of one node: kill -9, SIGTERM and SIGSTOP on the leader hand over without a pod restarted", async (t) => {
  const cluster = await useCluster();
  const id = crypto.randomUUID().slice(0, 6);
  const nodeName = `vk-ha-${id}`;
  const account = `vkubelet-ha-${id}`;
  const ns = await cluster.newNamespace("ha");
  const kubectl = cluster.kubectlIn(ns);
  const { path: kubeconfig, cleanup } = await serviceAccountKubeconfig(
    cluster,
    ns,
    account,
    nodeName,
  );
  const serving = await cluster.issueServingCert(nodeName, ["127.0.0.1", nodeName]);
  const replicas = new Set<{ vk: RunningVkubelet; metricsPort: number }>();
  /** Starts a replica; it campaigns at once. */
  const startReplica = async () => {
    const metricsPort = freePort();
    const vk = await startVkubelet(cluster, {
      nodeName,
      kubeconfig,
      waitReady: false,
      args: [
        "--leader-elect",
        `--metrics-addr=127.0.0.1:${metricsPort}`,
        `--tls-cert-file=${serving.certFile}`,
        `--tls-private-key-file=${serving.keyFile}`,
        // The test cluster's node monitor grace period is 20 s (a real one's 40-50 s).
        "--node-lease-renew-interval=2s",
      ],
    });
    const replica = { vk, metricsPort };
    replicas.add(replica);
    return replica;
  };
  const leads = (r: { vk: RunningVkubelet }) => r.vk.output().includes("became the leader");
  const standsBy = (r: { vk: RunningVkubelet }) => r.vk.output().includes("standing by as");
  // The node's Ready condition, sampled all along: it must never leave True once it is.
  const readiness: string[] = [];
  const sampling = new AbortController();
  let sampler: Promise<void> | undefined;
  const podsNow =
    async () => (JSON.parse(await kubectl(["get", "pods", "-o", "json"])).items as Pod[]);
  const nodeLeaseRenewTime = async () => {
    const res = await cluster.kubectl([
      "-n",
      "kube-node-lease",
      "get",
      "lease",
      nodeName,
      "-o",
      "jsonpath={.spec.renewTime}",
    ]);
    return res.code === 0 ? Date.parse(res.stdout) : NaN;
  };
  /** When the leader election Lease was last acquired (ms since the epoch). */
  const leaderAcquired = async () => {
    const res = await cluster.kubectl([
      "-n",
      "kube-node-lease",
      "get",
      "lease",
      `vkubelet-${nodeName}`,
      "-o",
      "jsonpath={.spec.acquireTime}",
    ]);
    return res.code === 0 ? Date.parse(res.stdout) : NaN;
  };
  const leaderAcquireTime = (since: number) =>
    eventually("the leader election Lease to be acquired again", async () => {
      const at = await leaderAcquired();
      return at > since ? at : undefined;
    }, 30_000);
  // When a pod's status changed, as a watch of the namespace sees it: the first change after a
  // takeover is the new leader's first pod status write.
  using admin = await KubeClient.fromConfig({ kubeconfig: cluster.kubeconfigPath, env: {} });
  const statusWrites: number[] = [];
  const watching = new AbortController();
  const podWatch = admin.pods.informer({ namespace: ns, name: "test pods" });
  podWatch.on("update", (pod, old) => {
    if (JSON.stringify(pod.status) !== JSON.stringify(old.status)) statusWrites.push(Date.now());
  });
  const watched = podWatch.run(watching.signal);
  const daemonPort = async () =>
    Number(
      (await cluster.kubectl([
        "get",
        "node",
        nodeName,
        "-o",
        "jsonpath={.status.daemonEndpoints.kubeletEndpoint.Port}",
      ])).stdout,
    );
  try {
    let leader = await startReplica();
    await eventually("the first replica to lead", () => leads(leader) || undefined);
    let standby = await startReplica();
    await eventually("the second replica to stand by", () => standsBy(standby) || undefined);
    assert.ok(!leads(standby), "only one replica leads");
    assert.equal(await healthz(standby.metricsPort), "ok: standby");
    await eventually("the node to be Ready", async () => {
      const res = await cluster.kubectl([
        "get",
        "node",
        nodeName,
        "-o",
        'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
      ]);
      return res.stdout === "True" || undefined;
    });
    assert.equal(await healthz(leader.metricsPort), "ok: leader");
    sampler = (async () => {
      while (!sampling.signal.aborted) {
        const res = await cluster.kubectl([
          "get",
          "node",
          nodeName,
          "-o",
          'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
        ]);
        if (res.code === 0) readiness.push(res.stdout);
        await new Promise((r) => setTimeout(r, 500));
      }
    })();

    const items = Array.from({ length: PODS }, (_, i) => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: `web-${i}`, namespace: ns },
      spec: {
        nodeSelector: { "kubernetes.io/hostname": nodeName },
        tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
        containers: [{ name: "main", image: "busybox", command: ["sleep", "inf"] }],
      },
    }));
    /** A pod bound to the node by name (no scheduler, so no status but the node's). */
    const boundPod = (name: string) => ({
      ...items[0],
      metadata: { name, namespace: ns },
      spec: { ...items[0].spec, nodeName },
    });
    await kubectl(["apply", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items }));
    await eventually(`${PODS} pods Running`, async () => {
      const pods = await podsNow();
      return pods.filter((p) => p.status?.phase === "Running").length === PODS || undefined;
    }, 120_000);
    // Wait for every container to report a start (the status writes settle).
    const before = podFacts(await podsNow());

    const killTimes: number[] = [];
    const leaseTimes: number[] = [];
    const acquireTimes: number[] = [];
    const acquiredToLease: number[] = [];
    const acquiredToStatus: number[] = [];
    await t.step("kill -9 the leader: the standby renews the node Lease within 15 s", async () => {
      for (let run = 0; run < 3; run++) {
        const next = standby;
        assert.equal(await nonReadRequests(next.metricsPort), 0, "a standby sends no writes");
        const killedAt = Date.now();
        await leader.vk.stop("SIGKILL");
        replicas.delete(leader);
        // A pod bound while no one leads: the new leader writes its status.
        await kubectl(["apply", "-f", "-"], JSON.stringify(boundPod(`during-${run}`)));
        await eventually("the standby to take over", () => leads(next) || undefined, 30_000);
        killTimes.push(Date.now() - killedAt);
        const renewed = await eventually("the node Lease to be renewed", async () => {
          const at = await nodeLeaseRenewTime();
          return at > killedAt ? at : undefined;
        }, 30_000);
        leaseTimes.push(renewed - killedAt);
        const acquired = await leaderAcquireTime(killedAt);
        acquireTimes.push(acquired - killedAt);
        acquiredToLease.push(renewed - acquired);
        const written = await eventually(
          "the new leader's first pod status write",
          () => statusWrites.find((at) => at >= acquired),
          30_000,
        );
        acquiredToStatus.push(written - acquired);
        assert.ok(
          renewed - killedAt <= 15_000,
          `node Lease renewed ${renewed - killedAt} ms after the kill`,
        );
        assert.equal(await daemonPort(), next.vk.port, "the node announces the new leader's port");
        leader = next;
        standby = await startReplica();
        await eventually("a new standby", () => standsBy(standby) || undefined);
      }
      console.log(`kill -9 → new leader: ${summary(killTimes)}`);
      console.log(`kill -9 → node Lease renewed: ${summary(leaseTimes)}`);
      console.log(`kill -9 → leader lease acquired: ${summary(acquireTimes)}`);
      console.log(`leader lease acquired → node Lease renewed: ${summary(acquiredToLease)}`);
      console.log(`leader lease acquired → first pod status write: ${summary(acquiredToStatus)}`);
    });

    await t.step("after the takeovers: no pod restarted, re-created or with a new IP", async () => {
      // Give the new leader time to write whatever it would change.
      await new Promise((r) => setTimeout(r, 3_000));
      const pods = await podsNow();
      const after = podFacts(pods.filter((p) => p.metadata?.name?.startsWith("web-")));
      assert.deepEqual(after, before);
      const during = pods.filter((p) => p.metadata?.name?.startsWith("during-"));
      assert.deepEqual(during.map((p) => p.status?.phase), ["Running", "Running", "Running"]);
    });

    await t.step("kubectl logs and exec go through the new leader; a new pod runs", async () => {
      await kubectl(["logs", "web-0"]);
      const out = await kubectl(["exec", "web-0", "--", "echo", "through-the-leader"]);
      assert.match(out, /through-the-leader/);
      await kubectl(
        ["apply", "-f", "-"],
        JSON.stringify({ ...items[0], metadata: { name: "late", namespace: ns } }),
      );
      await eventually("the new pod to run", async () => {
        const pod = JSON.parse(await kubectl(["get", "pod", "late", "-o", "json"])) as Pod;
        return pod.status?.phase === "Running" || undefined;
      });
    });

    await t.step("SIGTERM on the leader: handover within 3 s", async () => {
      const times: number[] = [];
      for (let run = 0; run < 3; run++) {
        const next = standby;
        assert.equal(await nonReadRequests(next.metricsPort), 0, "a standby sends no writes");
        const stoppedAt = Date.now();
        const stopping = leader.vk.stop("SIGTERM");
        await eventually("the standby to take over", () => leads(next) || undefined, 30_000);
        times.push(Date.now() - stoppedAt);
        assert.equal((await stopping).code, 0, leader.vk.output());
        replicas.delete(leader);
        leader = next;
        standby = await startReplica();
        await eventually("a new standby", () => standsBy(standby) || undefined);
      }
      console.log(`SIGTERM → new leader: ${summary(times)}`);
      assert.ok(times.every((ms) => ms <= 3_000), `handovers took ${times.join(", ")} ms`);
    });

    await t.step(
      "SIGSTOP past the lease: the old leader writes nothing after SIGCONT and stands by",
      async () => {
        const paused = leader;
        const next = standby;
        const writesBefore = await successfulWrites(paused.metricsPort);
        Deno.kill(paused.vk.pid, "SIGSTOP");
        const pausedAt = Date.now();
        try {
          await eventually(
            "the standby to take over",
            () => leads(next) || undefined,
            30_000,
          );
          console.log(`SIGSTOP → new leader: ${((Date.now() - pausedAt) / 1000).toFixed(2)} s`);
          await eventually("the new leader to renew the node Lease", async () => {
            const at = await nodeLeaseRenewTime();
            return at > pausedAt ? at : undefined;
          }, 30_000);
        } finally {
          Deno.kill(paused.vk.pid, "SIGCONT");
        }
        await eventually("the old leader to stand by", () => {
          return /lost the lease[\s\S]*stopped leading; standing by again/.test(
            paused.vk.output(),
          ) ||
            undefined;
        }, 30_000);
        await new Promise((r) => setTimeout(r, 3_000));
        assert.equal(await healthz(paused.metricsPort), "ok: standby");
        const metricsText = async (port: number) =>
          await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        assert.match(await metricsText(next.metricsPort), /^vkubelet_pods\{phase="Running"\} /m);
        assert.doesNotMatch(
          await metricsText(paused.metricsPort),
          /^vkubelet_pods\{/m,
          "the ended term's pods-by-phase collector is gone",
        );
        assert.equal(
          await successfulWrites(paused.metricsPort),
          writesBefore,
          "the resumed replica wrote nothing",
        );
        assert.equal(await daemonPort(), next.vk.port);
        leader = next;
        standby = paused;
      },
    );

    await t.step("the node never went NotReady; every pod is still Running", async () => {
      assert.ok(readiness.length > 10, "the Ready condition was sampled");
      assert.deepEqual([...new Set(readiness)], ["True"], `Ready was ${readiness.join(",")}`);
      const pods = await podsNow();
      assert.equal(pods.filter((p) => p.status?.phase === "Running").length, PODS + 4);
      const now = podFacts(pods.filter((p) => p.metadata?.name?.startsWith("web-")));
      assert.deepEqual(now, before);
    });
  } catch (err) {
    const logs = [...replicas].map((r, i) =>
      `--- replica ${i} (pid ${r.vk.pid}):\n${r.vk.output()}`
    );
    throw new Error(`${err}\n${logs.join("\n")}`, { cause: err });
  } finally {
    sampling.abort();
    await sampler;
    watching.abort();
    await watched;
    for (const r of replicas) await r.vk.stop("SIGKILL");
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
    await cluster.kubectl([
      "-n",
      "kube-node-lease",
      "delete",
      "lease",
      `vkubelet-${nodeName}`,
      "--ignore-not-found",
    ]);
    for (const args of cleanup) await cluster.kubectl(args);
    await Deno.remove(kubeconfig).catch(() => {});
  }
});
