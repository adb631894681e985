/**
 * The slurm provider on a login node: no slurmrestd, only SLURM's commands (sbatch, squeue
 * --json, scancel, sinfo, scontrol ping), against a real single-node SLURM; the job list holds
 * only the jobs of this node's users.
 */
import assert from "node:assert/strict";
import type { Node, Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { getLogger } from "../../../base/log.ts";
import { CliClient, commandRunner } from "../../../providers/slurm/client/cli.ts";
import { createProvider } from "../../../providers/slurm/mod.ts";
import { startSlurm } from "../../../tools/harness/slurm.ts";

Deno.test("through the CLI a pod runs as a job, its log is read and the node sized from sinfo", async () => {
  const slurm = await startSlurm({ cpus: 12, memoryMiB: 3000 });
  Deno.env.set("SLURM_CONF", slurm.conf);
  const shutdown = new AbortController();
  const provider = createProvider(
    {
      cli: {},
      sharedDir: slurm.sharedDir,
      stateDir: `${slurm.dir}/vk-state`,
      // vkubelet as root with no fileOwner: the jobs are root's, which the admin allows by name.
      allowRootNamespaces: ["ns"],
      statusInterval: "200ms",
    },
    {
      nodeName: "login-1",
      log: getLogger(["vkubelet", "provider", "test"]),
      clock: realClock,
      internalIp: "127.0.0.1",
      daemonPort: 10250,
      signal: shutdown.signal,
    },
  );
  try {
    await provider.ping({});
    const node: Node = { metadata: { name: "login-1" }, status: {} };
    await provider.configureNode(node);
    assert.equal(node.status?.capacity?.cpu, "12");
    assert.equal(node.status?.capacity?.memory, "3000Mi");
    const pod: Pod = {
      metadata: { namespace: "ns", name: "hello", uid: crypto.randomUUID() },
      spec: {
        restartPolicy: "Never",
        containers: [{
          name: "main",
          image: "busybox",
          command: ["sh", "-c", 'echo "hello $WHO"; exit 4'],
          env: [{ name: "WHO", value: "login node" }],
        }],
      },
    };
    await provider.createPod(pod, {});
    const deadline = Date.now() + 60_000;
    let status = (await provider.getPod("ns", "hello", {}))?.status;
    while (status?.phase !== "Failed" && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      status = (await provider.getPod("ns", "hello", {}))?.status;
    }
    assert.equal(status?.phase, "Failed");
    assert.equal(status?.containerStatuses?.[0].state?.terminated?.exitCode, 4);
    const log = await new Response(
      await provider.getContainerLogs({ namespace: "ns", pod: "hello", container: "main" }, {}),
    ).text();
    assert.equal(log, "hello login node\n");
    // The pod is Failed once its container's exit is known; the job ends a moment later, when
    // the batch script has passed the exit on.
    let job: { name: string; job_state: string } | undefined;
    while (Date.now() < deadline) {
      job = JSON.parse(await slurm.run("squeue", ["--all", "--json"])).jobs[0];
      if (job?.job_state !== "RUNNING" && job?.job_state !== "COMPLETING") break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(job?.name, "vk_ns_hello");
    assert.equal(job?.job_state, "FAILED");
    // The status loop lists only the jobs of this node's users: not another user's job.
    await slurm.run("sbatch", [
      "--uid=1",
      "--job-name=vk_ns_hello",
      "--comment=vkubelet node=login-1 pod=ns/hello uid=x run=0",
      "--chdir=/tmp",
      "--output=/dev/null",
      "--wrap=sleep 30",
    ]);
    const listed = await new CliClient(commandRunner(""), { users: [0] }).jobs({});
    assert.deepEqual(
      listed.map((j) => [j.state, j.reason, j.userId, j.comment.split(" uid=")[0]]),
      [["FAILED", "NonZeroExitCode", 0, "vkubelet node=login-1 pod=ns/hello"]],
    );
    assert.ok(listed[0].startMs > Date.now() - 120_000 && listed[0].endMs >= listed[0].startMs);
    await provider.deletePod(pod, {});
  } finally {
    await provider.close();
    shutdown.abort();
    Deno.env.delete("SLURM_CONF");
    await slurm.stop();
  }
});
