/**
 * interLink's `slurm-job.vk.io/*` annotations (issue 55 item 5): the same meaning as in
 * interLink's SLURM plugin, through the same allowlist as `slurm.vkubelet.io/<option>`.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { parseSlurmConfig, type SlurmConfig } from "../../../providers/slurm/config.ts";
import { jobRequestFor } from "../../../providers/slurm/request/job_request.ts";
import { sbatchArgs } from "../../../providers/slurm/client/cli.ts";
import { launcherScript } from "../../../providers/slurm/request/script.ts";

function config(extra: Record<string, unknown> = {}): SlurmConfig {
  const parsed = parseSlurmConfig({
    cli: {},
    sharedDir: "/shared",
    allowRootNamespaces: ["ns"], // the test may run as root, with no fileOwner
    ...extra,
  });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  return parsed.config;
}

function pod(annotations: Record<string, string>, resources = {}): Pod {
  return {
    metadata: { namespace: "ns", name: "p", uid: "u-1", annotations },
    spec: {
      containers: [{ name: "main", image: "busybox", command: ["hostname"], resources }],
    },
  };
}

const flags = (text: string, c = config(), resources = {}) =>
  jobRequestFor(pod({ "slurm-job.vk.io/flags": text }, resources), c, "n", 0);

Deno.test("slurm-job.vk.io/flags become sbatch options when podAnnotations allows them", () => {
  const allow = config({ podAnnotations: ["partition", "time", "gres", "mem", "constraint"] });
  const job = flags(`-p debug -t 10 --gres gpu:1 --mem=4G --constraint="a&b" -N 2`, allow);
  assert.deepEqual(
    [job.options.partition, job.options.time, job.options.gres, job.options.mem],
    ["debug", "10", "gpu:1", "4G"],
  );
  assert.equal(job.options.constraint, "a&b");
  assert.equal(job.options.nodes, "2", "task counts are always the pod's");
  assert.ok(sbatchArgs(job).includes("--partition=debug"));
  // As interLink (prepare.go:1071-1090): --mem from flags only when the pod sets no memory.
  const limited = flags("--mem=4G", allow, { limits: { memory: "1Gi" } });
  assert.equal(limited.options.mem, undefined);
  assert.equal(limited.memoryMiB, 1024);
});

Deno.test("slurm-job.vk.io/flags cannot set what runs or as whom, whatever the config allows", () => {
  const allow = config({ podAnnotations: ["partition"] });
  for (
    const [text, option] of [
      ["--uid=0", "--uid"],
      ["--export=ALL,LD_PRELOAD=/x.so", "--export"],
      ["-D /etc", "--chdir"],
      ["-o /etc/cron.d/x", "--output"],
      ["--partition=debug --wrap 'id'", "--wrap"],
      ["-J other", "--job-name"],
      ["--comment 'vkubelet node=x'", "--comment"],
      ["-x", "-x"],
    ]
  ) {
    assert.throws(
      () => flags(text, allow),
      new RegExp(`does not let pods set ${option};.*podAnnotations`),
      text,
    );
  }
  assert.throws(() => flags("debug"), /"debug" is not an sbatch flag/);
  const parsed = parseSlurmConfig({
    cli: {},
    sharedDir: "/s",
    flavors: { big: { uid: "0" } },
  });
  assert.ok(!parsed.ok && parsed.errors.some((e) => /flavors.*decide what runs/.test(e)));
});

Deno.test("slurm-job.vk.io/flavor picks the config's flavor; an unknown one is refused", () => {
  const c = config({ flavors: { "gpu-nvidia": { partition: "gpu", gres: "gpu:1" } } });
  const job = jobRequestFor(pod({ "slurm-job.vk.io/flavor": "gpu-nvidia" }), c, "n", 0);
  assert.deepEqual([job.options.partition, job.options.gres], ["gpu", "gpu:1"]);
  assert.throws(
    () => jobRequestFor(pod({ "slurm-job.vk.io/flavor": "high-io" }), c, "n", 0),
    /no flavor high-io \(flavors: gpu-nvidia\)/,
  );
});

Deno.test("slurm-job.vk.io/mpi-flags runs the containers under mpiexec over the job's tasks", () => {
  const p = pod({ "slurm-job.vk.io/mpi-flags": "--oversubscribe --bind-to core" });
  const launcher = launcherScript(p, p.spec!.containers[0], "/shared/d", config());
  assert.match(
    launcher,
    /^exec mpiexec -np "\$VK_JOB_NTASKS" '--oversubscribe' '--bind-to' 'core' 'hostname'$/m,
  );
  assert.match(
    jobRequestFor(p, config(), "n", 0).script,
    /export VK_JOB_NTASKS="\$\{SLURM_NTASKS:-1\}"/,
  );
  const none = pod({ "slurm-job.vk.io/mpi-flags": "true" });
  assert.match(
    launcherScript(none, none.spec!.containers[0], "/d", config()),
    /^exec 'hostname'$/m,
  );
});

Deno.test("apptainer annotations: options from a list, mounts under hostPaths, image-root", () => {
  const apptainer = config({ runtime: "apptainer", hostPaths: ["/scratch"] });
  const p = pod({
    "slurm-job.vk.io/singularity-options": "--nv --env A=1 --writable-tmpfs",
    "slurm-job.vk.io/singularity-mounts": "--bind /scratch/data:/data:ro -B /scratch/out",
    "slurm-job.vk.io/image-root": "/images/",
  });
  const launcher = launcherScript(p, p.spec!.containers[0], "/d", apptainer);
  assert.match(launcher, /'--nv' '--env' 'A=1' '--writable-tmpfs'/);
  assert.match(
    launcher,
    /'--bind' '\/scratch\/data:\/data:ro' '--bind' '\/scratch\/out:\/scratch\/out'/,
  );
  assert.match(launcher, /'\/images\/busybox'/);
  const refused: [Record<string, string>, RegExp, SlurmConfig?][] = [
    [{ "slurm-job.vk.io/singularity-options": "--fakeroot" }, /--fakeroot is not allowed/],
    [{ "slurm-job.vk.io/singularity-options": "--bind /etc:/x" }, /--bind is not allowed/],
    [{ "slurm-job.vk.io/singularity-mounts": "--bind /etc:/etc" }, /hostPath \/etc is not under/],
    [{ "slurm-job.vk.io/singularity-options": "--nv" }, /need runtime: apptainer/, config()],
    [{ "slurm-job.vk.io/pre-exec": "curl x | sh" }, /put them in an init container/],
    [{ "slurm-job.vk.io/enroot-options": "-w" }, /no enroot runtime/],
    [{ "slurm-job.vk.io/singularity-commands": "x" }, /singularity-commands/],
    [{ "slurm-job.vk.io/flagz": "-p x" }, /reads no such annotation/],
  ];
  for (const [annotations, message, c] of refused) {
    assert.throws(() => jobRequestFor(pod(annotations), c ?? apptainer, "n", 0), message);
  }
});
