/**
 * The slurm provider's config file (`--provider-config`, YAML or JSON), validated with zod; every
 * problem names its field.
 *
 * ```yaml
 * rest:                                  # slurmrestd; or `cli: {}` on a login node
 *   socket: /run/slurmrestd/rest.sock    # rest_auth/local on a unix socket, or
 *   # url: http://127.0.0.1:6820         # with user + tokenFile (rest_auth/jwt)
 *   # user: vk
 *   # tokenFile: /etc/vkubelet/slurm-jwt
 * cli: { bin: "" }                       # sbatch/squeue/scancel/sinfo/srun from PATH (or bin/)
 * sharedDir: /shared/vkubelet            # per-pod directories, seen by vkubelet and the nodes
 * stateDir: /var/lib/vkubelet/slurm      # vkubelet's own (this host): the job comments' key
 * fileOwner: { uid: 1000, gid: 1000 }    # the job user (chown, sbatch --uid); needed with runAsUsers
 * allowRootNamespaces: [ops]             # namespaces whose jobs may run as root (uid 0)
 * partition: batch
 * account: proj1
 * qos: normal
 * sbatchOptions: { exclusive: "" }       # extra options for every job
 * podAnnotations: [partition, qos]       # which slurm.vkubelet.io/<option> annotations pods may set
 * tasks: { nodes: 1, ntasks: 1, ntasksPerNode: 1, mpi: pmi2 } # the main container's step
 * extendedResources: { nvidia.com/gpu: gpu } # pod resource → SLURM GRES (`--gres=gpu:N`)
 * hostPaths: [/scratch, /home]          # hostPath volumes allowed at or under these paths
 * flavors: { gpu: { partition: gpu } }  # slurm-job.vk.io/flavor (interLink's): sbatch options
 * runtime: none                          # none (commands run on the node) | apptainer
 * imagePrefix: docker://                 # for images without a scheme or an absolute .sif path
 * apptainerBin: apptainer                # apptainer on the compute nodes (PATH or a path)
 * imageCommands: { nginx:1.27: [nginx, -g, "daemon off;"] }
 * runAsUsers:                            # namespace → the SLURM user its jobs run as (cli as root)
 *   team-a: { user: alice, uid: 1001, gid: 1001 }
 * statusInterval: 2s                     # one squeue (or GET /jobs) per interval for all jobs
 * statsInterval: 10s                     # at most one sstat per interval (needs cli)
 * restartBackOff: { initial: 10s, max: 5m }
 * capacity: { pods: "110" }              # cpu and memory come from the partition
 * ```
 * @module
 */
import { z } from "zod";
import { durationField, type ParsedConfig, parseProviderConfig } from "../../provider/mod.ts";

const absolutePath = z.string().refine((p) => p.startsWith("/"), {
  error: "must be an absolute path",
});

/** An sbatch long option name, without the dashes. */
const optionName = z.string().regex(/^[a-z][a-z0-9-]*$/, {
  error: "must be an sbatch long option name without dashes, such as constraint",
});

/** Options a pod may never set through an annotation: they decide what runs and as whom. */
const FORBIDDEN = [
  "uid",
  "gid",
  "chdir",
  "output",
  "error",
  "input",
  "wrap",
  "export",
  "get-user-env",
  "container",
  "comment",
  "job-name",
];

/** A namespace name (DNS-1123 label). */
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The SLURM user a namespace's jobs run as, and who owns their files. */
const namespaceUser = z.strictObject({
  user: z.string().regex(/^[a-z_][a-z0-9_.-]*\$?$/i, { error: "must be a user name" }).optional(),
  uid: z.number().int().min(1, {
    error: "must be a uid other than 0: jobs never run as root through runAsUsers",
  }),
  gid: z.number().int().min(0),
}, {
  error: (issue) =>
    typeof issue.input === "string"
      ? `runAsUsers maps a namespace to its SLURM user: write { <namespace>: { user: ${issue.input}, uid: <its uid>, gid: <its gid> } }`
      : undefined,
});

/** The slurm provider's config schema. */
export const slurmConfigSchema = z.strictObject({
  rest: z.strictObject({
    socket: absolutePath.optional(),
    url: z.url({ error: "must be a URL such as http://127.0.0.1:6820" }).optional(),
    user: z.string().min(1).optional(),
    tokenFile: absolutePath.optional(),
    version: z.string().regex(/^v0\.0\.\d+$/).optional(),
  }).refine((r) => (r.socket === undefined) !== (r.url === undefined), {
    error: "needs exactly one of socket (rest_auth/local) or url (with user and tokenFile)",
  }).optional(),
  cli: z.strictObject({
    bin: z.string().default(""),
  }).optional(),
  sharedDir: absolutePath,
  stateDir: absolutePath.optional(),
  allowRootNamespaces: z.array(
    z.string().regex(NAMESPACE, {
      error: "must be a namespace name, such as team-a",
    }),
  ).default([]),
  fileOwner: z.strictObject({ uid: z.number().int().min(0), gid: z.number().int().min(0) })
    .optional(),
  partition: z.string().min(1).optional(),
  account: z.string().min(1).optional(),
  qos: z.string().min(1).optional(),
  sbatchOptions: z.record(optionName, z.string()).default({}),
  podAnnotations: z.array(optionName.refine((o) => !FORBIDDEN.includes(o), {
    error: `may not be one of ${FORBIDDEN.join(", ")}: they decide what runs and as whom`,
  })).default([]),
  tasks: z.strictObject({
    nodes: z.number().int().min(1).optional(),
    ntasks: z.number().int().min(1).optional(),
    ntasksPerNode: z.number().int().min(1).optional(),
    mpi: z.string().regex(/^[a-z][a-z0-9_]*$/, {
      error: "must be an MPI plugin name such as pmi2 or none",
    }).optional(),
  }).default({}),
  extendedResources: z.record(
    z.string().regex(/^[a-z0-9.-]+\/[A-Za-z0-9._-]+$/, {
      error: "must be an extended resource name such as nvidia.com/gpu",
    }),
    z.string().regex(/^[a-z][a-z0-9_]*(:[A-Za-z0-9_.-]+)?$/, {
      error: "must be a GRES name, optionally with its type, such as gpu or gpu:a100",
    }),
  ).default({ "nvidia.com/gpu": "gpu" }),
  hostPaths: z.array(absolutePath.refine((p) => !p.split("/").includes(".."), {
    error: "must not contain ..",
  })).default([]),
  flavors: z.record(
    z.string().min(1),
    z.record(optionName, z.string()).superRefine((options, ctx) => {
      for (const option of Object.keys(options).filter((o) => FORBIDDEN.includes(o))) {
        ctx.addIssue({
          code: "custom",
          path: [option],
          message: `may not be one of ${FORBIDDEN.join(", ")}: they decide what runs and as whom`,
        });
      }
    }),
  ).default({}),
  runtime: z.enum(["none", "apptainer"]).default("none"),
  imagePrefix: z.string().default("docker://"),
  apptainerBin: z.string().min(1).default("apptainer"),
  imageCommands: z.record(z.string().min(1), z.array(z.string()).min(1)).default({}),
  runAsUsers: z.record(z.string().regex(NAMESPACE), namespaceUser, {
    error: (issue) =>
      issue.code === "invalid_key" ? "must be a namespace name, such as team-a" : undefined,
  }).default({}),
  statusInterval: durationField("2s", 100),
  statsInterval: durationField("10s", 100),
  restartBackOff: z.strictObject({
    initial: durationField("10s"),
    max: durationField("5m"),
  }).prefault({}),
  capacity: z.record(z.string(), z.string()).default({}),
  labels: z.record(z.string(), z.string()).default({}),
}).superRefine((c, ctx) => {
  if (Object.keys(c.runAsUsers).length > 0 && c.fileOwner === undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["fileOwner"],
      message:
        "fileOwner is required when runAsUsers is set: the pods of a namespace not listed there run as fileOwner, and without it as vkubelet's user, root; set fileOwner to an unprivileged user",
    });
  }
  const shared = c.sharedDir.replace(/\/+$/, "");
  const state = c.stateDir?.replace(/\/+$/, "");
  if (state !== undefined && (state === shared || state.startsWith(`${shared}/`))) {
    ctx.addIssue({
      code: "custom",
      path: ["stateDir"],
      message:
        "must not be sharedDir or under it: it holds the key that signs the jobs' comments, which the compute nodes must not see; choose a directory on vkubelet's host only",
    });
  }
}).refine((c) => c.rest !== undefined || c.cli !== undefined, {
  error: "needs rest (slurmrestd) or cli (sbatch and squeue on this host)",
}).refine((c) => c.rest === undefined || Object.keys(c.runAsUsers).length === 0, {
  path: ["runAsUsers"],
  error:
    "needs the cli backend alone: slurmrestd submits every job as the user it authenticates; remove rest (keep cli, with vkubelet as root) or remove runAsUsers",
});

/** The validated config; durations in milliseconds. */
export type SlurmConfig = z.output<typeof slurmConfigSchema>;

/** The annotation prefix that carries per-pod sbatch options (allowlisted in `podAnnotations`). */
export const ANNOTATION_PREFIX = "slurm.vkubelet.io/";

/** Validates a parsed config file; returns every problem, each with its field. */
export function parseSlurmConfig(input: unknown): ParsedConfig<SlurmConfig> {
  return parseProviderConfig(slurmConfigSchema, input, {
    provider: "slurm",
    required: "naming at least sharedDir and rest or cli",
  });
}
