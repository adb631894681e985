/**
 * A pod's sbatch options: `--cpus-per-task` and `--mem` from its requests/limits (the pod's
 * effective request: the larger of the sum of its regular containers and sidecars and of any
 * init container, as the scheduler counts it), `--time` from `activeDeadlineSeconds`, the
 * node config's partition, account, QoS and options, and the pod's `slurm.vkubelet.io/<option>`
 * annotations for the options the config allows.
 * @module
 */
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import {
  effectiveSecurityContext,
  InvalidInputError,
  isSidecar,
  quantityToNumber,
} from "../../../provider/mod.ts";
import type { JobRequest } from "../client/slurm_client.ts";
import { ANNOTATION_PREFIX, type SlurmConfig } from "../config.ts";
import { checkJobUser, hostUser } from "../ownership/identity.ts";
import { jobComment } from "../ownership/job_comment.ts";
import { batchScript, launcherScript, podDirName } from "./script.ts";
import { interlinkRequest } from "./interlink_annotations.ts";
import { allocationOptions, TASK_OPTIONS, taskLayout } from "./tasks.ts";

/**
 * Everything but the script's run number is fixed per pod; `run` counts submissions. The comment
 * is not yet signed (`../backend.ts` signs it). A pod whose job would run as root is refused.
 */
export function jobRequestFor(
  pod: Pod,
  config: SlurmConfig,
  node: string,
  run: number,
  elapsedMs = 0,
): JobRequest {
  const podDir = `${config.sharedDir}/${podDirName(pod)}`;
  const { namespace = "", name = "" } = pod.metadata ?? {};
  const cpu = effective(pod, "cpu");
  const memory = effective(pod, "memory");
  const deadline = pod.spec?.activeDeadlineSeconds;
  checkJobUser(pod, config);
  // Each container's launcher refuses a container it cannot run, before anything is written.
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    launcherScript(pod, c, podDir, config);
  }
  return {
    script: batchScript(pod, podDir, run, taskLayout(pod, config)),
    name: `vk_${namespace}_${name}`,
    comment: jobComment(node, pod, run),
    // The pod directory is vkubelet's: the job's own files go in its subdirectories.
    workDir: `${podDir}/home`,
    output: `${podDir}/state/job.out`,
    cpusPerTask: cpu > 0 ? Math.max(1, Math.ceil(cpu - 1e-9)) : undefined,
    memoryMiB: memory > 0 ? Math.ceil(memory / (1 << 20)) : undefined,
    timeLimitMinutes: deadline === undefined
      ? undefined
      : Math.max(1, Math.ceil((deadline * 1000 - elapsedMs) / 60_000)),
    options: jobOptions(pod, config),
  };
}

/**
 * The config's options, the pod's extended resources as GRES, then the pod's allowlisted
 * annotations, then the namespace's user.
 */
function jobOptions(pod: Pod, config: SlurmConfig): Record<string, string> {
  const options: Record<string, string> = { ...config.sbatchOptions };
  if (config.partition) options.partition = config.partition;
  if (config.account) options.account = config.account;
  if (config.qos) options.qos = config.qos;
  const gres = gresOf(pod, config);
  if (gres) options.gres = gres;
  Object.assign(options, allocationOptions(taskLayout(pod, config)));
  for (const [key, value] of Object.entries(pod.metadata?.annotations ?? {})) {
    if (!key.startsWith(ANNOTATION_PREFIX)) continue;
    const option = key.slice(ANNOTATION_PREFIX.length);
    // The task layout is always the pod's to choose (./tasks.ts), within the partition's limits.
    if ((TASK_OPTIONS as readonly string[]).includes(option)) continue;
    if (!config.podAnnotations.includes(option)) {
      throw new InvalidInputError(
        `annotation ${key}: the slurm provider config does not let pods set --${option}; remove the annotation or add ${option} to podAnnotations in the provider config`,
      );
    }
    options[option] = value;
  }
  // interLink's annotations, through the same allowlist (./interlink_annotations.ts).
  Object.assign(options, interlinkRequest(pod, config).options);
  const ns = pod.metadata?.namespace ?? "";
  const mapped = config.runAsUsers[ns];
  const uid = runAsUser(pod);
  if (uid !== undefined && uid !== mapped?.uid) {
    throw new InvalidInputError(
      mapped
        ? `runAsUser ${uid}: the pods of namespace ${ns} run as SLURM user ${
          mapped.user ?? mapped.uid
        } (uid ${mapped.uid}) by the provider config's runAsUsers; set runAsUser ${mapped.uid} or drop it`
        : `runAsUser ${uid}: namespace ${ns} has no SLURM user in the provider config's runAsUsers, so its jobs run as the node's one shared user; add ${ns}: { user, uid: ${uid}, gid } there (cli backend, vkubelet as root), or drop runAsUser`,
    );
  }
  if (mapped) {
    options.uid = mapped.user ?? String(mapped.uid);
    options.gid = String(mapped.gid);
  } else if (!config.rest && config.fileOwner && config.fileOwner.uid !== hostUser().uid) {
    // The commands as root: the job runs as the user its directories belong to.
    options.uid = String(config.fileOwner.uid);
    options.gid = String(config.fileOwner.gid);
  }
  return options;
}

/** The one runAsUser the pod asks for (pod or container level), or undefined. */
function runAsUser(pod: Pod): number | undefined {
  const asked = new Set<number>();
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    const uid = effectiveSecurityContext(pod.spec?.securityContext, c).runAsUser;
    if (uid !== undefined) asked.add(uid);
  }
  if (asked.size > 1) {
    throw new InvalidInputError(
      `the pod's containers run as different users (${
        [...asked].join(", ")
      }); a SLURM job runs as one user, so give every container the same runAsUser`,
    );
  }
  return [...asked][0];
}

/**
 * `--gres` for the pod's extended resources the config maps (`nvidia.com/gpu: 2` → `gpu:2`), or
 * undefined. One the config does not map is refused: the job would run without it.
 */
function gresOf(pod: Pod, config: SlurmConfig): string | undefined {
  const names = new Set<string>();
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    for (const r of [c.resources?.limits, c.resources?.requests]) {
      for (const name of Object.keys(r ?? {})) if (name.includes("/")) names.add(name);
    }
  }
  const gres: string[] = [];
  for (const name of [...names].sort()) {
    if (name.startsWith("hugepages-")) continue;
    const gresName = config.extendedResources[name];
    if (gresName === undefined) {
      throw new InvalidInputError(
        `resource ${name}: the slurm provider config maps no SLURM GRES to it; add ${name}: <gres name> under extendedResources in the provider config, or remove the request`,
      );
    }
    const count = Math.ceil(effective(pod, name) - 1e-9);
    if (count > 0) gres.push(`${gresName}:${count}`);
  }
  return gres.length > 0 ? gres.join(",") : undefined;
}

/** The pod's effective amount of a resource (cores, bytes, devices): limits, else requests. */
function effective(pod: Pod, resource: string): number {
  const of = (c: Container) => {
    const q = c.resources?.limits?.[resource] ?? c.resources?.requests?.[resource];
    return q === undefined ? 0 : quantityToNumber(String(q)) ?? 0;
  };
  const init = pod.spec?.initContainers ?? [];
  const running = [...init.filter(isSidecar), ...(pod.spec?.containers ?? [])]
    .reduce((sum, c) => sum + of(c), 0);
  return Math.max(running, ...init.filter((c) => !isSidecar(c)).map(of));
}
