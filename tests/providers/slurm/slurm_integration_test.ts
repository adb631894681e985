/**
 * The slurm provider against the local control plane and a real SLURM (issue 45's "what it must
 * do", item 6), all through `kubectl`: a 3-replica Deployment becomes 3 running SLURM jobs named
 * and commented for their pods; a Job with `completions: 5` completes; a pod that fails is
 * resubmitted after back-off with its restart counted; a ConfigMap volume is read by the job;
 * `kubectl logs -f` and `kubectl exec` reach the job's step; a job cancelled behind vkubelet's
 * back is resubmitted; a restarted vkubelet adopts its jobs and submits none twice; scale to 0
 * cancels the jobs.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { useCluster } from "../../../tools/cluster/harness.ts";
import { startVkubelet } from "../../../tools/cluster/vkubelet.ts";
import { eventually } from "../../../tools/harness/wait.ts";
import { NOBODY, startSlurm } from "../../../tools/harness/slurm.ts";

interface Job {
  job_id: number;
  job_state: string;
  name: string;
  comment: string;
  cpus: number;
}

Deno.test("slurm provider: pods run as SLURM jobs and follow the API through kubectl", async (t) => {
  const cluster = await useCluster();
  const slurm = await startSlurm();
  const nodeName = `vk-slurm-${crypto.randomUUID().slice(0, 6)}`;
  const ns = await cluster.newNamespace("slurm");
  const kubectl = cluster.kubectlIn(ns);
  const providerConfig = JSON.stringify({
    rest: { socket: slurm.socket },
    cli: {},
    sharedDir: slurm.sharedDir,
    stateDir: `${slurm.dir}/vk-state`,
    fileOwner: NOBODY,
    statusInterval: "500ms",
    restartBackOff: { initial: "1s", max: "10s" },
  });
  let node = await startVkubelet(cluster, {
    nodeName,
    provider: "slurm",
    providerConfig,
    env: slurm.env,
  });
  const placement = {
    nodeSelector: { "kubernetes.io/hostname": nodeName },
    tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
  };
  const pods = async (selector: string): Promise<Pod[]> =>
    (JSON.parse(await kubectl(["get", "pods", "-l", selector, "-o", "json"])).items as Pod[])
      .filter((p) => !p.metadata?.deletionTimestamp);
  const jobs = async (): Promise<Job[]> =>
    (JSON.parse(await slurm.run("squeue", ["--all", "--json"])).jobs as Job[])
      .filter((j) => j.comment.includes(`node=${nodeName} `));
  const live = async () =>
    (await jobs()).filter((j) => ["PENDING", "RUNNING"].includes(j.job_state));
  const apply = (object: unknown) => kubectl(["apply", "-f", "-"], JSON.stringify(object));
  try {
    await t.step("a 3-replica Deployment runs as 3 SLURM jobs", async () => {
      await apply({
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "web" },
        spec: {
          replicas: 3,
          selector: { matchLabels: { app: "web" } },
          template: {
            metadata: { labels: { app: "web" } },
            spec: {
              ...placement,
              terminationGracePeriodSeconds: 1,
              containers: [{
                name: "main",
                image: "busybox",
                command: ["sh", "-c", 'echo "hello from $HOSTNAME"; exec sleep 3600'],
                resources: { requests: { cpu: "1500m", memory: "100Mi" } },
              }],
            },
          },
        },
      });
      await kubectl(["rollout", "status", "deployment/web", "--timeout=120s"]);
      const running = await pods("app=web");
      assert.equal(running.length, 3);
      const listed = await live();
      for (const pod of running) {
        assert.equal(pod.status?.phase, "Running");
        const job = listed.find((j) => j.comment.includes(`uid=${pod.metadata?.uid} `));
        assert.ok(job, `no SLURM job for ${pod.metadata?.name}`);
        assert.equal(job.job_state, "RUNNING");
        assert.equal(job.name, `vk_${ns}_${pod.metadata?.name}`);
        assert.equal(job.cpus, 2, "1500m rounds up to --cpus-per-task=2");
        const condition = pod.status?.conditions?.find((c) => c.type === "slurm.vkubelet.io/Job");
        assert.match(condition?.message ?? "", new RegExp(`job ${job.job_id} RUNNING`));
      }
    });

    await t.step("a Job with completions: 5 completes", async () => {
      await apply({
        apiVersion: "batch/v1",
        kind: "Job",
        metadata: { name: "five" },
        spec: {
          completions: 5,
          parallelism: 3,
          backoffLimit: 0,
          template: {
            spec: {
              ...placement,
              restartPolicy: "Never",
              containers: [{ name: "main", image: "busybox", command: ["sh", "-c", "echo done"] }],
            },
          },
        },
      });
      await kubectl(["wait", "--for=condition=complete", "job/five", "--timeout=180s"]);
      const done = await pods("job-name=five");
      assert.equal(done.filter((p) => p.status?.phase === "Succeeded").length, 5);
      const logs = await kubectl(["logs", done[0].metadata!.name!]);
      assert.equal(logs, "done\n");
    });

    await t.step(
      "a pod that fails is resubmitted after back-off, its restarts counted",
      async () => {
        await apply({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "crash", labels: { app: "crash" } },
          spec: {
            ...placement,
            restartPolicy: "OnFailure",
            containers: [{
              name: "main",
              image: "busybox",
              command: ["sh", "-c", "echo boom; exit 3"],
            }],
          },
        });
        const pod = await eventually("crash restarted twice", async () => {
          const [p] = await pods("app=crash");
          return (p?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 2 && p;
        }, 120_000);
        const c = pod.status!.containerStatuses![0];
        assert.equal(c.lastState?.terminated?.exitCode, 3);
        assert.equal(c.lastState?.terminated?.reason, "Error");
        const previous = await kubectl(["logs", "crash", "--previous"]);
        assert.equal(previous, "boom\n");
      },
    );

    await t.step("a ConfigMap volume is readable by the job, and not by others", async () => {
      await apply({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "settings" },
        data: { "greeting.txt": "hello from a ConfigMap" },
      });
      await apply({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "reader", labels: { app: "reader" } },
        spec: {
          ...placement,
          restartPolicy: "Never",
          volumes: [{ name: "settings", configMap: { name: "settings" } }],
          containers: [{
            name: "main",
            image: "busybox",
            command: ["sh", "-c", 'cat "$VKUBELET_VOLUME_SETTINGS/greeting.txt"'],
            volumeMounts: [{ name: "settings", mountPath: "/etc/settings" }],
          }],
        },
      });
      await eventually("reader Succeeded", async () => {
        const [p] = await pods("app=reader");
        return p?.status?.phase === "Succeeded" && p;
      }, 120_000);
      assert.equal(await kubectl(["logs", "reader"]), "hello from a ConfigMap\n");
      const [reader] = await pods("app=reader");
      const dir = `${slurm.sharedDir}/${ns}_reader_${reader.metadata?.uid}`;
      const file = await Deno.stat(`${dir}/volumes/settings/greeting.txt`);
      assert.equal(file.mode! & 0o077, 0, "volume files are not readable by group or others");
      assert.equal(file.uid, NOBODY.uid, "owned by the job's user");
    });

    await t.step("kubectl logs -f follows and kubectl exec runs in the job", async () => {
      const [pod] = await pods("app=web");
      const name = pod.metadata!.name!;
      assert.equal(
        await kubectl(["exec", name, "--", "sh", "-c", "echo $HOSTNAME; exit 0"]),
        `${name}\n`,
      );
      await assert.rejects(kubectl(["exec", name, "--", "sh", "-c", "exit 7"]), /exit code 7/);
      const follow = new Deno.Command("kubectl", {
        args: ["--kubeconfig", cluster.kubeconfigPath, "-n", ns, "logs", "-f", name],
        stdout: "piped",
        stderr: "null",
      }).spawn();
      const reader = follow.stdout.getReader();
      const { value } = await reader.read();
      assert.equal(new TextDecoder().decode(value), `hello from ${name}\n`);
      follow.kill("SIGTERM");
      await reader.cancel();
      await follow.status;
    });

    await t.step(
      "a job cancelled behind vkubelet's back is resubmitted (restartPolicy Always)",
      async () => {
        const [pod] = await pods("app=web");
        const before = (await live()).find((j) => j.comment.includes(`uid=${pod.metadata?.uid} `))!;
        await slurm.run("scancel", [String(before.job_id)]);
        const after = await eventually("the pod running in a new job", async () => {
          const [p] = (await pods("app=web")).filter((x) => x.metadata?.uid === pod.metadata?.uid);
          const c = p?.status?.containerStatuses?.[0];
          return c?.restartCount === 1 && c.state?.running && p;
        }, 120_000);
        assert.match(
          after.status!.containerStatuses![0].lastState?.terminated?.message ?? "",
          /CANCELLED/,
        );
        const now = (await live()).filter((j) => j.comment.includes(`uid=${pod.metadata?.uid} `));
        assert.equal(now.length, 1);
        assert.notEqual(now[0].job_id, before.job_id);
      },
    );

    await t.step("a restarted vkubelet adopts its jobs and submits none twice", async () => {
      const web = async () =>
        (await live()).filter((j) => j.name.startsWith(`vk_${ns}_web-`)).map((j) => j.job_id)
          .sort();
      const before = await web();
      assert.equal(before.length, 3);
      await node.stop();
      node = await startVkubelet(cluster, {
        nodeName,
        provider: "slurm",
        like: node,
        env: slurm.env,
      });
      await new Promise((r) => setTimeout(r, 4000));
      assert.deepEqual(await web(), before);
      const running = await pods("app=web");
      assert.equal(running.length, 3);
      assert.ok(running.every((p) => p.status?.phase === "Running"));
    });

    await t.step("scale to 0 cancels the jobs", async () => {
      await kubectl(["scale", "deployment/web", "--replicas=0"]);
      await eventually("no web pods", async () => (await pods("app=web")).length === 0, 120_000);
      await eventually("no live jobs", async () => (await live()).length === 0, 60_000);
    });
  } finally {
    await node.stop();
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]).catch(() => {});
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]).catch(() => {});
    await slurm.stop();
  }
});
