/**
 * The floor's SLURM backend: what a kubelet for SLURM must ask of slurmrestd for one pod, and no
 * more — a batch job submitted (one `srun --overlap` step of the pod's command), the job listing
 * read once per interval for every pod (as vkubelet's status loop does) until the job is RUNNING;
 * on deletion the job cancelled and seen ended.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { FloorBackend } from "./floor.ts";

/** Where the floor's SLURM is. */
export interface SlurmFloorConfig {
  /** slurmrestd's unix socket. */
  socket: string;
  /** How often the job listing is read, in ms. */
  intervalMs: number;
}

/** Runs tasks a few at a time (the floor's limiter). */
interface Limit {
  run(task: () => Promise<void>): Promise<void>;
}

const ENDED = new Set(["COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED"]);

/** The floor's slurmrestd calls for one pod; see the module doc. */
export function slurmFloorBackend(floor: SlurmFloorConfig, limit: Limit): FloorBackend {
  const client = Deno.createHttpClient({ proxy: { transport: "unix", path: floor.socket } });
  const rest = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(`http://slurmrestd/slurm/v0.0.38/${path}`, {
      method,
      client,
      headers: { "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return await r.json();
  };
  const jobs = new Map<string, number>();
  /** Waiters on a job's state, settled by the one listing each interval. */
  const waiting = new Map<number, { want: (state: string) => boolean; done: () => void }>();
  let listing: Promise<void> | undefined;
  const poll = () => {
    listing ??= (async () => {
      while (waiting.size > 0) {
        await new Promise((r) => setTimeout(r, floor.intervalMs));
        const listed = (await rest("GET", "jobs").catch(() => ({ jobs: [] }))).jobs as {
          job_id: number;
          job_state: string;
        }[];
        const states = new Map(listed.map((j) => [j.job_id, j.job_state]));
        for (const [id, w] of waiting) {
          const state = states.get(id) ?? "CANCELLED";
          if (w.want(state)) {
            waiting.delete(id);
            w.done();
          }
        }
      }
      listing = undefined;
    })();
  };
  const until = (id: number, want: (state: string) => boolean) =>
    new Promise<void>((done) => {
      waiting.set(id, { want, done });
      poll();
    });
  const key = (pod: Pod) => `${pod.metadata?.namespace}/${pod.metadata?.name}`;
  return {
    async run(pod) {
      const argv = pod.spec?.containers[0]?.command ?? ["sleep", "3600"];
      let id = 0;
      await limit.run(async () => {
        const answer = await rest("POST", "job/submit", {
          script: `#!/bin/bash\nsrun --overlap --ntasks=1 ${argv.join(" ")}\n`,
          job: {
            name: key(pod).replace("/", "_"),
            comment: "floor-kubelet",
            cpus_per_task: 1,
            current_working_directory: "/tmp",
            standard_output: "/dev/null",
            environment: { PATH: "/usr/bin:/bin" },
          },
        });
        id = answer.job_id;
      });
      if (!id) throw new Error(`slurmrestd did not take ${key(pod)}'s job`);
      jobs.set(key(pod), id);
      await until(id, (state) => state === "RUNNING" || ENDED.has(state));
    },
    async remove(pod) {
      const id = jobs.get(key(pod));
      if (id === undefined) return;
      await limit.run(() => rest("DELETE", `job/${id}`).then(() => {}));
      await until(id, (state) => ENDED.has(state));
      jobs.delete(key(pod));
    },
  };
}
