/**
 * A real single-node SLURM for the slurm provider's tests: Debian 12's packages (installed on
 * first use, pinned, as `.ci/run` does), then `munged`, `slurmctld`, `slurmd` (proctrack/linuxproc,
 * task/none, no cgroups, no accounting) and `slurmrestd` (as `nobody`, rest_auth/local on a unix
 * socket) started from a generated `slurm.conf` in a temporary directory, on free loopback
 * ports, and stopped afterwards. Needs root (slurmd runs jobs as their users). And a fake
 * backend for tests that need no SLURM.
 * @module
 */
import type {
  JobInfo,
  JobRequest,
  PartitionInfo,
  SlurmClient,
} from "../../providers/slurm/client/slurm_client.ts";
import { freePort } from "../cluster/ports.ts";
import { killMarkedProcesses } from "./processes.ts";
import { eventually } from "./wait.ts";

/** The Debian 12 package versions the tests are written against. */
export const SLURM_PACKAGES = [
  "slurmctld=22.05.8-4+deb12u3",
  "slurmd=22.05.8-4+deb12u3",
  "slurm-client=22.05.8-4+deb12u3",
  "slurmrestd=22.05.8-4+deb12u3",
  "munge=0.5.15-2+deb12u1",
];

/** The uid and gid slurmrestd (and so every job it submits) runs as. */
export const NOBODY = { uid: 65534, gid: 65534 };

/** A running SLURM. */
export interface Slurm {
  /** The temporary directory everything lives in. */
  dir: string;
  /** slurm.conf, for `SLURM_CONF`. */
  conf: string;
  /** slurmrestd's unix socket. */
  socket: string;
  /** A directory jobs (as nobody) and vkubelet share. */
  sharedDir: string;
  /** The environment SLURM's commands need. */
  env: Record<string, string>;
  /** Runs a SLURM command (squeue, scancel, ...); its stdout. */
  run(command: string, args: string[]): Promise<string>;
  stop(): Promise<void>;
}

async function output(cmd: string, args: string[], env?: Record<string, string>) {
  const out = await new Deno.Command(cmd, { args, env, stdout: "piped", stderr: "piped" })
    .output();
  if (!out.success) {
    throw new Error(
      `${cmd} ${args.join(" ")} failed: ${new TextDecoder().decode(out.stderr).trim()}`,
    );
  }
  return new TextDecoder().decode(out.stdout);
}

/** Installs the SLURM packages unless they are there (idempotent). */
export async function installSlurm(): Promise<void> {
  const have = await Promise.all(
    [
      "/usr/sbin/slurmctld",
      "/usr/sbin/slurmd",
      "/usr/sbin/slurmrestd",
      "/usr/bin/sbatch",
      "/usr/sbin/munged",
    ]
      .map((p) => Deno.stat(p).then(() => true, () => false)),
  );
  if (have.every(Boolean)) return;
  const env = { DEBIAN_FRONTEND: "noninteractive", PATH: Deno.env.get("PATH") ?? "" };
  await output("apt-get", ["update", "-qq"], env);
  await output(
    "apt-get",
    ["install", "-y", "-qq", "--no-install-recommends", ...SLURM_PACKAGES],
    env,
  );
}

/** The node's size as slurm.conf declares it (slurmd takes it over the host's own). */
export interface SlurmSize {
  /** CPUs of the one node (default 64). */
  cpus?: number;
  /** Memory of the node in MiB (default 64000); jobs without `--mem` get 100 MiB a CPU. */
  memoryMiB?: number;
  /** Extra slurm.conf lines (a bench's launch throttles), appended before the node line. */
  extraConf?: string[];
  /**
   * GPUs the node declares as the generic resource `gpu`: gres.conf's `File=` names links to
   * /dev/null (22.05's slurmd counts a `Count=` line without `File=` as no GPU, and a device file
   * must be a character or block device). SLURM schedules them and sets `CUDA_VISIBLE_DEVICES`.
   */
  gpus?: number;
}

function slurmConf(
  dir: string,
  host: string,
  ports: { ctld: number; slurmd: number },
  size: SlurmSize,
): string {
  return `ClusterName=vktest
SlurmctldHost=${host}(127.0.0.1)
SlurmctldPort=${ports.ctld}
SlurmdPort=${ports.slurmd}
AuthType=auth/munge
AuthInfo=socket=${dir}/run/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=${dir}/state
SlurmdSpoolDir=${dir}/spool
SlurmctldPidFile=${dir}/run/slurmctld.pid
SlurmdPidFile=${dir}/run/slurmd.pid
SlurmctldLogFile=${dir}/log/slurmctld.log
SlurmdLogFile=${dir}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=100
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
MinJobAge=300
KillWait=2
MaxJobCount=20000
${size.gpus ? "GresTypes=gpu\n" : ""}${
    (size.extraConf ?? []).map((line) => `${line}\n`).join("")
  }NodeName=${host} NodeAddr=127.0.0.1 CPUs=${size.cpus ?? 64} RealMemory=${
    size.memoryMiB ?? 64000
  }${size.gpus ? ` Gres=gpu:${size.gpus}` : ""} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
`;
}

/** Installs (if needed) and starts a one-node SLURM with slurmrestd; see the module doc. */
export async function startSlurm(size: SlurmSize = {}): Promise<Slurm> {
  await installSlurm();
  const dir = await Deno.makeTempDir({ prefix: "vk-slurm-" });
  await Deno.chmod(dir, 0o711);
  for (const sub of ["munge", "run", "state", "spool", "log", "rest", "shared"]) {
    await Deno.mkdir(`${dir}/${sub}`);
  }
  await Deno.chmod(`${dir}/munge`, 0o700);
  await Deno.chmod(`${dir}/run`, 0o755);
  await Deno.chmod(`${dir}/shared`, 0o711);
  await Deno.chown(`${dir}/rest`, NOBODY.uid, NOBODY.gid);
  await Deno.writeFile(`${dir}/munge/munge.key`, crypto.getRandomValues(new Uint8Array(1024)), {
    mode: 0o600,
  });
  const host = Deno.hostname();
  const conf = `${dir}/slurm.conf`;
  await Deno.writeTextFile(
    conf,
    slurmConf(dir, host, { ctld: freePort(), slurmd: freePort() }, size),
  );
  if (size.gpus) {
    await Deno.mkdir(`${dir}/dev`);
    for (let i = 0; i < size.gpus; i++) await Deno.symlink("/dev/null", `${dir}/dev/gpu${i}`);
    await Deno.writeTextFile(
      `${dir}/gres.conf`,
      `Name=gpu File=${dir}/dev/gpu[0-${size.gpus - 1}]\n`,
    );
  }
  const env = { SLURM_CONF: conf };
  const children: Deno.ChildProcess[] = [];
  const spawn = (cmd: string, args: string[]) => {
    const child = new Deno.Command(cmd, {
      args,
      env: { ...env, SLURMRESTD_SECURITY: "disable_user_check" },
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    children.push(child);
  };
  const stop = async () => {
    // Jobs first: slurmstepd and what it runs outlive slurmd, and a bench leaves a thousand.
    await output("scancel", ["--quiet", "--full", "--partition=debug"], env).catch(() => {});
    for (const child of children.reverse()) {
      try {
        child.kill("SIGTERM");
      } catch {
        // Already gone.
      }
      await child.status;
    }
    // slurmstepd and its steps carry the cluster's SLURM_CONF in their environment.
    await killMarkedProcesses({ environ: `SLURM_CONF=${conf}\0` });
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  const run = (command: string, args: string[]) => output(command, args, env);
  try {
    spawn("munged", [
      "-F",
      "-f",
      `--socket=${dir}/run/munge.sock`,
      `--key-file=${dir}/munge/munge.key`,
      `--log-file=${dir}/log/munged.log`,
      `--pid-file=${dir}/munge/munged.pid`,
      `--seed-file=${dir}/munge/munged.seed`,
    ]);
    await eventually("munged to come up", () => Deno.stat(`${dir}/run/munge.sock`), 60_000, 200);
    spawn("slurmctld", ["-D", "-i"]);
    spawn("slurmd", ["-D"]);
    await eventually(
      "slurmctld and slurmd to come up",
      async () => /idle/.test(await run("sinfo", ["--noheader", "--format=%T"])),
      60_000,
      200,
    );
    spawn("setpriv", [
      `--reuid=${NOBODY.uid}`,
      `--regid=${NOBODY.gid}`,
      "--clear-groups",
      "slurmrestd",
      "-s",
      "openapi/v0.0.38",
      "-a",
      "rest_auth/local",
      `unix:${dir}/rest/rest.sock`,
    ]);
    await eventually(
      "slurmrestd to come up",
      () => Deno.stat(`${dir}/rest/rest.sock`),
      60_000,
      200,
    );
  } catch (err) {
    // What the daemons said is why: gone with the directory otherwise.
    const logs = await Promise.all(
      ["slurmctld", "slurmd"].map((d) =>
        Deno.readTextFile(`${dir}/log/${d}.log`).then(
          (text) => `${d}.log:\n${text.split("\n").slice(-15).join("\n")}`,
          () => "",
        )
      ),
    );
    await stop();
    throw new Error(`${(err as Error).message}\n${logs.join("\n")}`, { cause: err });
  }
  return { dir, conf, socket: `${dir}/rest/rest.sock`, sharedDir: `${dir}/shared`, env, run, stop };
}

/**
 * A backend with no SLURM behind it, for tests: every submitted job is listed as RUNNING,
 * submitted by `user`; `jobsList` may be given jobs beforehand (jobs a restarted vkubelet finds).
 */
export class FakeSlurmBackend implements SlurmClient {
  readonly kind = "fake";
  readonly jobsList: JobInfo[];
  readonly #user: number;

  constructor(options: { user?: number; jobs?: JobInfo[] } = {}) {
    this.#user = options.user ?? NOBODY.uid;
    this.jobsList = options.jobs ?? [];
  }

  submit(job: JobRequest): Promise<number> {
    const id = this.jobsList.length + 100;
    this.jobsList.push({
      id,
      state: "RUNNING",
      reason: "None",
      comment: job.comment,
      exitStatus: 0,
      startMs: Date.now(),
      endMs: 0,
      userId: this.#user,
    });
    return Promise.resolve(id);
  }

  jobs(): Promise<JobInfo[]> {
    return Promise.resolve(structuredClone(this.jobsList));
  }

  cancel(): Promise<void> {
    return Promise.resolve();
  }

  ping(): Promise<void> {
    return Promise.resolve();
  }

  partitions(): Promise<PartitionInfo[]> {
    return Promise.resolve([]);
  }

  close(): void {}
}
