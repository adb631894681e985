/**
 * `deno run -A bench/scenarios/slurm_jobs.ts [--pods=1000] [--interval=1s]`: the slurm provider
 * on a real single-node SLURM (tools/harness/slurm.ts, sized for `--pods` one-CPU jobs) against
 * the local control plane. Measures, for a Deployment of `--pods` replicas, create → every pod
 * Running (its job RUNNING) and delete → every pod gone and every job ended; and the floor: the
 * same batch jobs (one `srun --overlap` step each) submitted, seen RUNNING, cancelled and seen
 * ended directly through slurmrestd, with the same listing interval ("SLURM alone"); and the floor
 * kubelet (bench/tools/floor.ts with ./../tools/floor_slurm.ts), which takes the apiserver path a
 * kubelet must beside the same jobs, so that the ratio compares the same work. Needs root.
 * @module
 */
import { parseArgs } from "node:util";
import { type TestCluster, useCluster } from "../../tools/cluster/harness.ts";
import { startVkubelet } from "../../tools/cluster/vkubelet.ts";
import { NOBODY, type Slurm, startSlurm } from "../../tools/harness/slurm.ts";
import { startFloorKubelet, timeRollout } from "../tools/rollout.ts";

const say = (line: string) => Deno.stdout.writeSync(new TextEncoder().encode(line + "\n"));
const LIVE = ["PENDING", "RUNNING", "CONFIGURING", "COMPLETING"];
/**
 * With SLURM's defaults, slurmd on two cores times out on its own sockets when hundreds of jobs
 * launch at once (the launch is requeued held, the node marked not responding): longer message
 * and batch-start timeouts, and at most 50 jobs started a scheduling pass, every 2 s. Both sides
 * run on the same SLURM.
 */
const LAUNCH_THROTTLES = [
  "SchedulerParameters=sched_interval=2,default_queue_depth=50,sched_max_job_start=50," +
  "bf_max_job_start=50,bf_interval=5",
  "MessageTimeout=60",
  "BatchStartTimeout=120",
];

/** A slurmrestd call on its socket. */
async function rest(client: Deno.HttpClient, method: string, path: string, body?: unknown) {
  const r = await fetch(`http://slurmrestd/slurm/v0.0.38/${path}`, {
    method,
    client,
    headers: { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return await r.json();
}

async function until(what: string, check: () => Promise<boolean>, intervalMs: number) {
  const deadline = Date.now() + 30 * 60_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Submit → RUNNING → cancel → ended, straight through slurmrestd. */
async function floor(slurm: Slurm, pods: number, intervalMs: number) {
  const client = Deno.createHttpClient({ proxy: { transport: "unix", path: slurm.socket } });
  const script = "#!/bin/bash\nsrun --overlap --ntasks=1 sleep 3600\n";
  const started = performance.now();
  const ids: number[] = [];
  for (let i = 0; i < pods; i += 20) {
    const batch = Array.from(
      { length: Math.min(20, pods - i) },
      (_, k) =>
        rest(client, "POST", "job/submit", {
          script,
          job: {
            name: `floor-${i + k}`,
            comment: "floor",
            cpus_per_task: 1,
            current_working_directory: "/tmp",
            standard_output: "/dev/null",
            environment: { PATH: "/usr/bin:/bin" },
          },
        }),
    );
    ids.push(...(await Promise.all(batch)).map((a) => a.job_id as number));
  }
  const states = async () => {
    const jobs = (await rest(client, "GET", "jobs")).jobs as {
      job_id: number;
      job_state: string;
    }[];
    return jobs.filter((j) => ids.includes(j.job_id));
  };
  await until(
    "floor jobs RUNNING",
    async () => {
      const now = await states();
      // A launch slurmd could not take (it times out when too many start at once) ends the run.
      const stuck = now.filter((j) => !["PENDING", "RUNNING"].includes(j.job_state));
      if (stuck.length > 0) {
        throw new Error(
          `${stuck.length} floor jobs ended without running (${
            stuck[0].job_state
          }); slurmd could not launch ${pods} jobs at once here: use a smaller --pods`,
        );
      }
      return now.filter((j) => j.job_state === "RUNNING").length === pods;
    },
    intervalMs,
  );
  const running = performance.now() - started;
  const deleting = performance.now();
  for (let i = 0; i < ids.length; i += 20) {
    await Promise.all(ids.slice(i, i + 20).map((id) => rest(client, "DELETE", `job/${id}`)));
  }
  await until(
    "floor jobs ended",
    async () => (await states()).every((j) => !LIVE.includes(j.job_state)),
    intervalMs,
  );
  const gone = performance.now() - deleting;
  client.close();
  return { running, gone };
}

/** Who runs the node: it is started on `nodeName`; `owns` picks its jobs by their comment. */
interface Kubelet {
  start(cluster: TestCluster, nodeName: string): Promise<{ stop(): Promise<unknown> }>;
  owns(comment: string, nodeName: string): boolean;
}

/** A Deployment of `pods` replicas on a node `kubelet` runs, then deleted; the two times. */
async function throughNode(slurm: Slurm, pods: number, intervalMs: number, kubelet: Kubelet) {
  const cluster = await useCluster();
  const nodeName = `vk-slurm-bench-${crypto.randomUUID().slice(0, 6)}`;
  const ns = await cluster.newNamespace("slurm-bench");
  const node = await kubelet.start(cluster, nodeName);
  const live = async () =>
    (JSON.parse(await slurm.run("squeue", ["--json"])).jobs as {
      comment: string;
      job_state: string;
    }[]).filter((j) => kubelet.owns(j.comment, nodeName) && LIVE.includes(j.job_state)).length;
  try {
    const t = await timeRollout({
      kubectl: cluster.kubectlIn(ns),
      nodeName,
      pods,
      requests: { cpu: "1" },
      terminationGracePeriodSeconds: 0,
      left: live,
      everyMs: intervalMs,
    });
    return { running: t.upMs, gone: t.downMs };
  } finally {
    await node.stop();
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]).catch(() => {});
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]).catch(() => {});
  }
}

/** vkubelet with the slurm provider. */
const vkubelet = (slurm: Slurm, pods: number, interval: string): Kubelet => ({
  start: (cluster, nodeName) =>
    startVkubelet(cluster, {
      nodeName,
      provider: "slurm",
      providerConfig: JSON.stringify({
        rest: { socket: slurm.socket },
        cli: {},
        sharedDir: slurm.sharedDir,
        fileOwner: NOBODY,
        statusInterval: interval,
        capacity: { pods: String(pods + 10) },
      }),
      env: slurm.env,
    }),
  owns: (comment, nodeName) => comment.includes(`node=${nodeName} `),
});

/**
 * The floor kubelet (bench/tools/floor.ts with its SLURM backend): the apiserver path a kubelet
 * must take (bound pod seen, status written, pod deleted) and the same jobs through slurmrestd.
 */
const floorKubelet = (slurm: Slurm, pods: number, intervalMs: number): Kubelet => ({
  start: (cluster, nodeName) =>
    startFloorKubelet(cluster, nodeName, {
      capacity: { cpu: String(pods + 10), memory: "4000Gi", pods: String(pods + 10) },
      slurm: { socket: slurm.socket, intervalMs },
    }),
  owns: (comment) => comment === "floor-kubelet",
});

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      pods: { type: "string", default: "1000" },
      interval: { type: "string", default: "1s" },
    },
  });
  const pods = Number(values.pods);
  const intervalMs = Number(/^(\d+)s$/.exec(values.interval!)?.[1] ?? 1) * 1000;
  const slurm = await startSlurm({
    cpus: pods + 8,
    memoryMiB: (pods + 8) * 100,
    extraConf: LAUNCH_THROTTLES,
  });
  try {
    const load = (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
    say(`slurm_jobs: ${pods} pods, listing every ${values.interval}; load average before: ${load}`);
    const f = await floor(slurm, pods, intervalMs);
    say(
      `SLURM alone (slurmrestd directly): submit → all RUNNING ${
        seconds(f.running)
      }; cancel → all ended ${seconds(f.gone)}`,
    );
    const k = await throughNode(slurm, pods, intervalMs, floorKubelet(slurm, pods, intervalMs));
    say(
      `floor kubelet (apiserver path + the same jobs): create → all Running ${
        seconds(k.running)
      }; delete → all gone, jobs ended ${seconds(k.gone)}`,
    );
    const v = await throughNode(slurm, pods, intervalMs, vkubelet(slurm, pods, values.interval!));
    say(
      `vkubelet --provider slurm: create → all Running ${
        seconds(v.running)
      }; delete → all gone, jobs ended ${seconds(v.gone)}`,
    );
    say(
      `ratio to the floor kubelet: to Running ${(v.running / k.running).toFixed(2)}×, to gone ${
        (v.gone / k.gone).toFixed(2)
      }×`,
    );
    const after = (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
    say(`load average after: ${after}`);
  } finally {
    await slurm.stop();
  }
}
