/**
 * Which listed jobs a (restarted) vkubelet adopts as its pods' runs: only a job whose comment it
 * signed for this node (`./job_comment.ts`), that runs as the pod's user (`./identity.ts`), and
 * whose saved `pod.json`, if there is one, is the pod the comment names. Anyone can comment a job,
 * so every other job commented for this node is logged and left alone: neither adopted nor, as an
 * orphan, cancelled, and its directory never touched.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { type Logger, standInPod } from "../../../provider/mod.ts";
import type { JobInfo } from "../client/slurm_client.ts";
import type { SlurmConfig } from "../config.ts";
import { jobUserOf } from "./identity.ts";
import { type JobCommentKey, type JobIdentity, parseJobComment } from "./job_comment.ts";
import { podDirOf, readSavedPod } from "../request/pod_dir.ts";

/** What {@link adoptableJob} needs. */
export interface AdoptionDeps {
  config: SlurmConfig;
  log: Logger;
  nodeName: string;
  key: JobCommentKey;
}

/** The job's pod when the job is this node's to adopt (see the module doc); else logs why not. */
export async function adoptableJob(
  job: JobInfo,
  deps: AdoptionDeps,
): Promise<{ id: JobIdentity; pod: Pod } | undefined> {
  const { config, log, nodeName } = deps;
  const parsed = parseJobComment(job.comment);
  if (!parsed) {
    if (job.comment.includes(` node=${nodeName} `)) {
      log.warn(
        "not adopting SLURM job {job}: its comment names this node but is not one vkubelet writes (names that are not DNS-1123 names, a uid that is not a UUID): forged, left alone",
        { job: job.id, comment: job.comment },
      );
    }
    return undefined;
  }
  const id = parsed.id;
  // Other nodes' jobs first, without a MAC to compute: a restart lists the whole cluster's.
  if (id.node !== nodeName) return undefined;
  const pod = `${id.namespace}/${id.name}`;
  if (!await deps.key.verify(parsed)) {
    log.warn(
      parsed.mac === undefined
        ? "not adopting SLURM job {job} whose comment names {pod} on this node: it carries no MAC (submitted by a vkubelet before job comments were signed, or forged); left alone: cancel it (scancel {job}) if it is this node's"
        : "not adopting SLURM job {job} whose comment names {pod} on this node: its MAC does not verify with this node's key (forged, or signed with a key vkubelet's stateDir no longer holds); left alone",
      { job: job.id, pod },
    );
    return undefined;
  }
  // vkubelet signed it, yet only a job of the user vkubelet submits the pod's jobs as is its own.
  const user = jobUserOf(config, id.namespace);
  if (job.userId !== user.uid) {
    log.warn(
      "not adopting SLURM job {job} whose comment names {pod} on this node: it runs as uid {uid}, not as the pod's user (uid {expected})",
      { job: job.id, pod, uid: job.userId, expected: user.uid },
    );
    return undefined;
  }
  const identity = { metadata: { namespace: id.namespace, name: id.name, uid: id.uid } };
  const saved = await readSavedPod(podDirOf(config, identity));
  const meta = saved?.metadata;
  if (
    saved && (meta?.namespace !== id.namespace || meta?.name !== id.name || meta?.uid !== id.uid)
  ) {
    log.warn(
      "not adopting SLURM job {job} whose comment names {pod}: the pod.json in its directory is {saved}'s",
      { job: job.id, pod, saved: `${meta?.namespace}/${meta?.name} (uid ${meta?.uid})` },
    );
    return undefined;
  }
  return { id, pod: saved ?? standInPod(id, { containers: [] }) };
}
