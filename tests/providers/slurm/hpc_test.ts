/**
 * What HPC users of the slurm provider start with (issue 55), against a real single-node SLURM
 * through its commands, vkubelet as root: GPUs (`nvidia.com/gpu` → `--gres=gpu:N`, the node
 * declaring two as a GRES); the main container as several tasks (`slurm.vkubelet.io/ntasks`);
 * hostPath volumes under `hostPaths`; interLink's `slurm-job.vk.io/flags`; one shell per job.
 */
import assert from "node:assert/strict";
import type { Container, Node, Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { getLogger } from "../../../base/log.ts";
import { createProvider } from "../../../providers/slurm/mod.ts";
import { NOBODY, startSlurm } from "../../../tools/harness/slurm.ts";
import { eventually } from "../../../tools/harness/wait.ts";

const isRoot = Deno.statSync("/proc/self").uid === 0;

/** The command names of the processes of a SLURM job (by `SLURM_JOB_ID` in their environment). */
async function jobProcesses(jobId: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const environ = await Deno.readTextFile(`/proc/${entry.name}/environ`);
      if (!environ.split("\0").includes(`SLURM_JOB_ID=${jobId}`)) continue;
      names.push((await Deno.readTextFile(`/proc/${entry.name}/comm`)).trim());
    } catch {
      // Gone, or a kernel thread.
    }
  }
  return names.sort();
}

function pod(name: string, containers: Container[]): Pod {
  return {
    metadata: { namespace: "hpc", name, uid: crypto.randomUUID() },
    spec: { restartPolicy: "Never", containers },
  };
}

Deno.test({
  name: "slurm provider: GPUs, tasks and shared paths reach SLURM",
  ignore: !isRoot,
  fn: async (t) => {
    const slurm = await startSlurm({ gpus: 2 });
    const scratch = `${slurm.dir}/scratch`;
    await Deno.mkdir(`${scratch}/project`, { recursive: true });
    await Deno.chown(`${scratch}/project`, NOBODY.uid, NOBODY.gid);
    await Deno.writeTextFile(`${scratch}/project/input.txt`, "shared input\n");
    Deno.env.set("SLURM_CONF", slurm.conf);
    const stop = new AbortController();
    const provider = createProvider({
      cli: {},
      sharedDir: slurm.sharedDir,
      stateDir: `${slurm.dir}/vk-state`,
      fileOwner: NOBODY,
      statusInterval: "300ms",
      hostPaths: [`${slurm.dir}/scratch/`],
      podAnnotations: ["time"],
    }, {
      nodeName: "vk-hpc",
      log: getLogger(["vkubelet", "provider", "test"]),
      clock: realClock,
      internalIp: "127.0.0.1",
      daemonPort: 10250,
      signal: stop.signal,
    });
    const created: Pod[] = [];
    const create = async (p: Pod) => {
      created.push(p);
      await provider.createPod(p, {});
    };
    const logs = async (name: string, container = "main") =>
      await new Response(
        await provider.getContainerLogs({ namespace: "hpc", pod: name, container }, {}),
      ).text().catch(() => "");
    const status = async (name: string) => (await provider.getPod("hpc", name, {}))?.status;
    try {
      await t.step("the node offers the partition's GPUs as nvidia.com/gpu", async () => {
        const node: Node = { metadata: { name: "vk-hpc" }, status: {} };
        await provider.configureNode(node);
        assert.equal(node.status?.capacity?.["nvidia.com/gpu"], "2");
      });

      await t.step("a pod asking for GPUs gets them; one asking for more waits", async () => {
        const gpu = (name: string, count: string) =>
          pod(name, [{
            name: "main",
            image: "busybox",
            command: ["sh", "-c", 'echo "gpus=$CUDA_VISIBLE_DEVICES"; exec sleep 300'],
            resources: { limits: { "nvidia.com/gpu": count } },
          }]);
        await create(gpu("both-gpus", "2"));
        await eventually(
          "both-gpus to log",
          async () => /gpus=/.test(await logs("both-gpus")),
          60_000,
        );
        assert.equal(await logs("both-gpus"), "gpus=0,1\n");
        await create(gpu("one-more", "1"));
        const waiting = await eventually("one-more to wait for a GPU", async () => {
          const w = (await status("one-more"))?.containerStatuses?.[0]?.state?.waiting;
          return w?.message?.includes("Resources") && w;
        }, 30_000);
        assert.equal((await status("one-more"))?.phase, "Pending");
        assert.match(waiting.message!, /PENDING.*Resources|Resources/);
        await assert.rejects(
          create(gpu("too-many", "3")),
          /Requested node configuration is not available/,
          "a pod asking for more GPUs than any node has is refused by sbatch, its reason given",
        );
        for (const p of created.splice(0)) await provider.deletePod(p, {});
      });

      await t.step("the main container runs as two tasks; a sidecar as one", async () => {
        const mpi = pod("two-tasks", [
          {
            name: "side",
            image: "busybox",
            command: ["sh", "-c", 'echo "side $SLURM_PROCID of $SLURM_NTASKS"'],
          },
          {
            name: "main",
            image: "busybox",
            command: ["sh", "-c", 'echo "task $SLURM_PROCID of $SLURM_NTASKS"'],
          },
        ]);
        mpi.metadata!.annotations = {
          "slurm.vkubelet.io/ntasks": "2",
          "kubectl.kubernetes.io/default-container": "main",
        };
        await create(mpi);
        await eventually("two-tasks to succeed", async () => {
          return (await status("two-tasks"))?.phase === "Succeeded";
        }, 60_000);
        const lines = (await logs("two-tasks")).trim().split("\n").sort();
        assert.deepEqual(lines, ["task 0 of 2", "task 1 of 2"]);
        assert.equal(await logs("two-tasks", "side"), "side 0 of 1\n");
      });

      await t.step(
        "a hostPath under hostPaths is reached at its path; another is refused",
        async () => {
          const project = `${scratch}/project`;
          const shared = pod("scratch", [{
            name: "main",
            image: "busybox",
            command: [
              "sh",
              "-c",
              `cat ${project}/input.txt; echo "$VKUBELET_VOLUME_WORK"; echo out > ${project}/output.txt`,
            ],
            volumeMounts: [{ name: "work", mountPath: project }],
          }]);
          shared.spec!.volumes = [{ name: "work", hostPath: { path: project } }];
          await create(shared);
          await eventually(
            "scratch to succeed",
            async () => (await status("scratch"))?.phase === "Succeeded",
            60_000,
          );
          assert.equal(await logs("scratch"), `shared input\n${project}\n`);
          assert.equal(await Deno.readTextFile(`${project}/output.txt`), "out\n");
          const etc = pod("etc", [{
            name: "main",
            image: "busybox",
            command: ["cat", "/etc/shadow"],
            volumeMounts: [{ name: "etc", mountPath: "/etc" }],
          }]);
          etc.spec!.volumes = [{ name: "etc", hostPath: { path: "/etc" } }];
          await assert.rejects(
            create(etc),
            /hostPath \/etc is not under .*add its shared filesystem to hostPaths/,
          );
          const escape = structuredClone(etc);
          escape.metadata!.name = "escape";
          escape.spec!.volumes = [{ name: "etc", hostPath: { path: `${project}/../../../etc` } }];
          await assert.rejects(create(escape), /hostPaths/);
          const elsewhere = structuredClone(shared);
          elsewhere.metadata!.name = "elsewhere";
          elsewhere.spec!.containers[0].volumeMounts = [{ name: "work", mountPath: "/work" }];
          await assert.rejects(create(elsewhere), /set mountPath to /);
        },
      );

      await t.step("interLink's slurm-job.vk.io/flags size the job; --uid is refused", async () => {
        const p = pod("interlink", [{
          name: "main",
          image: "busybox",
          command: ["sh", "-c", 'echo "job tasks $VK_JOB_NTASKS"; exec sleep 300'],
        }]);
        p.metadata!.annotations = { "slurm-job.vk.io/flags": "-n 2 --time 10" };
        await create(p);
        await eventually(
          "interlink to log",
          async () => /tasks/.test(await logs("interlink")),
          60_000,
        );
        assert.equal(await logs("interlink"), "job tasks 2\n");
        const id =
          (await slurm.run("squeue", ["--noheader", "--format=%i", "--name=vk_hpc_interlink"]))
            .trim();
        const shown = await slurm.run("scontrol", ["show", "job", id]);
        assert.match(shown, /TimeLimit=00:10:00/);
        assert.match(shown, /NumTasks=2 /);
        const root = pod("as-root", [{ name: "main", image: "busybox", command: ["id"] }]);
        root.metadata!.annotations = { "slurm-job.vk.io/flags": "--time=5 --uid=0" };
        await assert.rejects(create(root), /does not let pods set --uid/);
      });

      await t.step(
        "a running one-container job costs the batch shell and srun, no other shell",
        async () => {
          await create(pod("one-shell", [{
            name: "main",
            image: "busybox",
            command: ["sleep", "300"],
          }]));
          await eventually(
            "one-shell running",
            async () =>
              (await status("one-shell"))?.containerStatuses?.[0]?.state?.running !== undefined,
            60_000,
          );
          const id =
            (await slurm.run("squeue", ["--noheader", "--format=%i", "--name=vk_hpc_one-shell"]))
              .trim();
          // A moment for the step to have become the container (srun → launcher → sleep).
          await eventually(
            "the container to be sleep",
            async () => (await jobProcesses(id)).includes("sleep"),
            30_000,
          );
          const names = await jobProcesses(id);
          // The batch shell (slurm_script), srun and its helper, the container: no shell of ours.
          assert.deepEqual(names, ["sleep", "slurm_script", "srun", "srun"]);
        },
      );
    } finally {
      for (const p of created) await provider.deletePod(p, {}).catch(() => {});
      await provider.close();
      stop.abort();
      Deno.env.delete("SLURM_CONF");
      await slurm.stop();
    }
  },
});
