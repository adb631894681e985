/** Pod → sbatch options and config validation of the slurm provider (no SLURM needed). */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { parseSlurmConfig, type SlurmConfig } from "../../../providers/slurm/config.ts";
import { jobRequestFor } from "../../../providers/slurm/request/job_request.ts";
import { sbatchArgs } from "../../../providers/slurm/client/cli.ts";
import { jobFields } from "../../../providers/slurm/client/rest.ts";
import { parseJobComment } from "../../../providers/slurm/ownership/job_comment.ts";

function config(extra: Record<string, unknown> = {}): SlurmConfig {
  const parsed = parseSlurmConfig({
    rest: { socket: "/run/rest.sock" },
    sharedDir: "/shared",
    fileOwner: { uid: 65534, gid: 65534 }, // slurmrestd's user
    ...extra,
  });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  return parsed.config;
}

const UID = "5f0c1e8a-2b7d-4c3e-9a61-7d2e0b4f6a18";

function pod(spec: Partial<Pod["spec"]> = {}, annotations: Record<string, string> = {}): Pod {
  return {
    metadata: { namespace: "ns", name: "p", uid: UID, annotations },
    spec: { containers: [{ name: "main", image: "busybox", command: ["true"] }], ...spec },
  };
}

Deno.test("requests and limits become --cpus-per-task and --mem, the deadline --time", () => {
  const job = jobRequestFor(
    pod({
      activeDeadlineSeconds: 90,
      initContainers: [{
        name: "init",
        image: "b",
        command: ["true"],
        resources: { requests: { cpu: "3" } },
      }],
      containers: [
        {
          name: "a",
          image: "b",
          command: ["true"],
          resources: { requests: { cpu: "500m", memory: "100Mi" } },
        },
        {
          name: "b",
          image: "b",
          command: ["true"],
          resources: { limits: { cpu: "1", memory: "1Gi" } },
        },
      ],
    }),
    config({ partition: "batch", account: "proj", qos: "low" }),
    "node-1",
    0,
  );
  assert.equal(job.cpusPerTask, 3, "the init container's 3 CPUs exceed the containers' 1.5");
  assert.equal(job.memoryMiB, 1124);
  assert.equal(job.timeLimitMinutes, 2);
  assert.deepEqual(job.options, { partition: "batch", account: "proj", qos: "low" });
  assert.equal(job.name, "vk_ns_p");
  assert.deepEqual(parseJobComment(job.comment), {
    id: { node: "node-1", namespace: "ns", name: "p", uid: UID, run: 0 },
    text: job.comment,
  });
  const args = sbatchArgs(job);
  assert.ok(args.includes("--cpus-per-task=3") && args.includes("--mem=1124M"));
  assert.ok(args.includes("--time=2") && args.includes("--partition=batch"));
  const fields = jobFields(job);
  assert.equal(fields.memory_per_node, 1124);
  assert.equal(fields.time_limit, 2);
  assert.equal(fields.qos, "low");
});

Deno.test("a pod's sbatch annotation is taken only when the config allows that option", () => {
  const annotated = pod({}, { "slurm.vkubelet.io/constraint": "gpu" });
  assert.throws(
    () => jobRequestFor(annotated, config(), "n", 0),
    /annotation slurm.vkubelet.io\/constraint.*add constraint to podAnnotations/,
  );
  const job = jobRequestFor(annotated, config({ podAnnotations: ["constraint"] }), "n", 0);
  assert.equal(job.options.constraint, "gpu");
  assert.equal(jobFields(job).constraints, "gpu");
});

Deno.test("a namespace's pods run as its runAsUsers user; another runAsUser is refused", () => {
  const asUser = pod({ securityContext: { runAsUser: 1000 } });
  assert.throws(
    () => jobRequestFor(asUser, config(), "n", 0),
    /runAsUser 1000: namespace ns has no SLURM user in the provider config's runAsUsers/,
  );
  const cli = parseSlurmConfig({
    cli: {},
    sharedDir: "/s",
    fileOwner: { uid: 4321, gid: 99 },
    runAsUsers: { ns: { user: "alice", uid: 1000, gid: 100 }, other: { uid: 1001, gid: 100 } },
  });
  assert.ok(cli.ok);
  const job = jobRequestFor(asUser, cli.config, "n", 0);
  assert.deepEqual([job.options.uid, job.options.gid], ["alice", "100"]);
  assert.ok(sbatchArgs(job).includes("--uid=alice"));
  const plain = jobRequestFor(pod(), cli.config, "n", 0);
  assert.deepEqual([plain.options.uid, plain.options.gid], ["alice", "100"], "without runAsUser");
  const owned = parseSlurmConfig({ cli: {}, sharedDir: "/s", fileOwner: { uid: 4321, gid: 99 } });
  assert.ok(owned.ok);
  const asOwner = jobRequestFor(pod(), owned.config, "n", 0);
  assert.deepEqual([asOwner.options.uid, asOwner.options.gid], ["4321", "99"], "fileOwner's job");
  assert.throws(
    () => jobRequestFor(pod({ securityContext: { runAsUser: 1001 } }), cli.config, "n", 0),
    /runAsUser 1001: the pods of namespace ns run as SLURM user alice \(uid 1000\)/,
  );
});

Deno.test("runAsUsers is validated: namespace keys, no root, no slurmrestd, the old shape named", () => {
  const parsed = parseSlurmConfig({
    rest: { socket: "/run/rest.sock" },
    sharedDir: "/s",
    runAsUsers: {
      "1000": "alice",
      "Team_A": { uid: 1000, gid: 1000 },
      root: { uid: 0, gid: 0 },
    },
  });
  assert.equal(parsed.ok, false);
  const text = parsed.ok ? "" : parsed.errors.join("\n");
  assert.match(text, /runAsUsers\.1000: runAsUsers maps a namespace to its SLURM user: write/);
  assert.match(text, /runAsUsers\.Team_A: must be a namespace name/);
  assert.match(text, /runAsUsers\.root\.uid: must be a uid other than 0/);
  const rest = parseSlurmConfig({
    rest: { socket: "/run/rest.sock" },
    sharedDir: "/s",
    runAsUsers: { ns: { uid: 1000, gid: 1000 } },
  });
  assert.match(
    rest.ok ? "" : rest.errors.join(),
    /runAsUsers: needs the cli backend alone: slurmrestd submits every job as the user it authenticates/,
  );
});

Deno.test("a bad config names each field and the fix", () => {
  const parsed = parseSlurmConfig({
    rest: { socket: "/a", url: "http://127.0.0.1:1" },
    sharedDir: "relative",
    podAnnotations: ["uid"],
    statusInterval: "soon",
  });
  assert.equal(parsed.ok, false);
  const text = parsed.ok ? "" : parsed.errors.join("\n");
  assert.match(text, /rest.*exactly one of socket/);
  assert.match(text, /sharedDir.*absolute path/);
  assert.match(text, /podAnnotations.*decide what runs and as whom/);
  assert.match(text, /statusInterval.*duration/);
  const neither = parseSlurmConfig({ sharedDir: "/s" });
  assert.match(neither.ok ? "" : neither.errors.join(), /needs rest \(slurmrestd\) or cli/);
});

Deno.test("a container without a command and no imageCommands entry is refused, naming the fix", () => {
  const noCommand = pod({ containers: [{ name: "web", image: "nginx:1.27" }] });
  assert.throws(
    () => jobRequestFor(noCommand, config(), "n", 0),
    /image nginx:1.27 has no command/,
  );
});

Deno.test("extended resources become --gres by the config's map; an unmapped one is refused", () => {
  const gpus = (resources: Record<string, string>) =>
    pod({
      containers: [
        { name: "a", image: "b", command: ["true"], resources: { limits: resources } },
        { name: "c", image: "b", command: ["true"], resources: { limits: resources } },
      ],
    });
  const job = jobRequestFor(gpus({ "nvidia.com/gpu": "2" }), config(), "n", 0);
  assert.equal(job.options.gres, "gpu:4");
  assert.ok(sbatchArgs(job).includes("--gres=gpu:4"));
  assert.equal(jobFields(job).gres, "gpu:4");
  const typed = config({
    extendedResources: { "nvidia.com/gpu": "gpu:a100", "example.com/fpga": "fpga" },
  });
  assert.equal(
    jobRequestFor(gpus({ "nvidia.com/gpu": "1", "example.com/fpga": "1" }), typed, "n", 0).options
      .gres,
    "fpga:2,gpu:a100:2",
  );
  assert.throws(
    () => jobRequestFor(gpus({ "example.com/fpga": "1" }), config(), "n", 0),
    /resource example.com\/fpga: .*add example.com\/fpga: <gres name> under extendedResources/,
  );
  assert.equal(jobRequestFor(pod(), config(), "n", 0).options.gres, undefined);
});

Deno.test("the task layout goes to the allocation and to the main container's step alone", () => {
  const p = pod({
    containers: [
      { name: "helper", image: "b", command: ["true"] },
      { name: "solver", image: "b", command: ["true"] },
    ],
  }, {
    "slurm.vkubelet.io/nodes": "2",
    "slurm.vkubelet.io/ntasks-per-node": "4",
    "slurm.vkubelet.io/mpi": "pmi2",
    "kubectl.kubernetes.io/default-container": "solver",
  });
  const job = jobRequestFor(p, config({ tasks: { ntasks: 8, mpi: "none" } }), "n", 0);
  assert.deepEqual(
    [job.options.nodes, job.options.ntasks, job.options["ntasks-per-node"], job.options.mpi],
    ["2", "8", "4", undefined],
  );
  assert.match(
    job.script,
    /step 'solver' '-' '--nodes=2' '--ntasks=8' '--ntasks-per-node=4' '--mpi=pmi2'; last=\$\?/,
  );
  assert.match(job.script, /step 'helper' '-' '--nodes=1' '--ntasks=1' &/);
  assert.deepEqual(jobFields(job).nodes, [2, 2]);
  assert.equal(jobFields(job).tasks_per_node, 4);
  assert.throws(
    () => jobRequestFor(pod({}, { "slurm.vkubelet.io/ntasks": "two" }), config(), "n", 0),
    /slurm.vkubelet.io\/ntasks: "two" is not a positive count/,
  );
});
