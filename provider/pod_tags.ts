/**
 * The tag that marks a backend object (a container group, a task, a capsule, a batch job) as one
 * run of this node's pod: node, namespace, name, uid and run (the restarts before it), so that a
 * restarted vkubelet adopts its objects and no other node's. One codec — {@link encodePodTag}, and
 * {@link decodePodTag} that takes only what vkubelet writes (a node and a pod name that are
 * DNS-1123 subdomains, a namespace that is a DNS-1123 label, a UUID, a run of at most 9 digits) —
 * and a carrier per backend for where the object keeps it: key/value pairs
 * ({@link keyedPodTags}: cloud tags, labels) or one line of text ({@link podTagText}: a job
 * comment). A backend whose objects anyone may write signs the text and checks the signature
 * before it decodes (providers/slurm/ownership/job_comment.ts). {@link standInPod} is the pod a
 * run adopted this way stands for until the core hands the real one over.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";

type RestartPolicy = "Always" | "OnFailure" | "Never";

/** Which run of which pod a backend object is, and the node that made it. */
export interface PodTag {
  /** The node that made the object. */
  node: string;
  /** The pod's namespace. */
  namespace: string;
  /** The pod's name. */
  name: string;
  /** The pod's uid. */
  uid: string;
  /** How many restarts came before this run (0 for the first). */
  run: number;
}

/** A DNS-1123 label: a namespace (kubernetes apimachinery validation IsDNS1123Label). */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** A DNS-1123 subdomain: a pod's or node's name (IsDNS1123Subdomain), 253 characters at most. */
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** A UUID as the apiserver writes a pod's uid. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A run count as vkubelet writes it. */
const RUN = /^\d{1,9}$/;

/** True for a DNS-1123 subdomain (a pod or node name). */
export function isDnsSubdomain(text: string): boolean {
  return text.length <= 253 && DNS_SUBDOMAIN.test(text);
}

/** The tag of `pod`'s run that comes after `run` restarts, made by the node `nodeName`. */
export function encodePodTag(nodeName: string, pod: Pod, run = 0): PodTag {
  const { namespace = "", name = "", uid = "" } = pod.metadata ?? {};
  return { node: nodeName, namespace, name, uid, run };
}

/**
 * The tag in `fields` when every field is one vkubelet writes (see the module doc); undefined
 * otherwise. `run` absent is 0 (an object of a vkubelet that did not count).
 */
export function decodePodTag(
  fields: { [K in keyof PodTag]?: string | number },
): PodTag | undefined {
  const { node, namespace, name, uid, run = 0 } = fields;
  if (typeof node !== "string" || !isDnsSubdomain(node)) return undefined;
  if (typeof namespace !== "string" || !DNS_LABEL.test(namespace)) return undefined;
  if (typeof name !== "string" || !isDnsSubdomain(name)) return undefined;
  if (typeof uid !== "string" || !UUID.test(uid)) return undefined;
  if (!RUN.test(String(run))) return undefined;
  return { node, namespace, name, uid, run: Number(run) };
}

/** How one backend keeps a tag on its objects: written and read back (strictly). */
export interface PodTagCarrier<C> {
  /** The tag as the object carries it. */
  write(tag: PodTag): C;
  /** The tag the object carries; undefined for none, or one vkubelet does not write. */
  read(carried: C | undefined): PodTag | undefined;
}

/** The keys of a {@link keyedPodTags} carrier, one a field. */
export interface PodTagKeys {
  /** The node's key. */
  node: string;
  /** The namespace's key. */
  namespace: string;
  /** The pod name's key. */
  name: string;
  /** The uid's key. */
  uid: string;
  /** Where the run count is kept; none: not kept (read as 0). */
  run?: string;
  /** Older keys of the run count, read when `run` is absent. */
  oldRun?: string[];
}

/**
 * A carrier in key/value pairs (a cloud's tags, a label map) under `keys`; the object's other
 * pairs are the backend's.
 *
 * @example Usage
 * ```ts
 * import { keyedPodTags } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * const tags = keyedPodTags({ node: "n", namespace: "ns", name: "pod", uid: "uid", run: "run" });
 * const tag = { node: "vk", namespace: "default", name: "web", uid: crypto.randomUUID(), run: 2 };
 * assert.deepEqual(tags.read(tags.write(tag)), tag);
 * assert.equal(tags.read({ ...tags.write(tag), pod: "../web" }), undefined);
 * ```
 */
export function keyedPodTags(keys: PodTagKeys): PodTagCarrier<Record<string, string>> {
  return {
    write: (tag) => ({
      [keys.node]: tag.node,
      [keys.namespace]: tag.namespace,
      [keys.name]: tag.name,
      [keys.uid]: tag.uid,
      ...(keys.run ? { [keys.run]: String(tag.run) } : {}),
    }),
    read: (carried) => {
      if (!carried) return undefined;
      const runKey = [keys.run, ...keys.oldRun ?? []].find((k) => k && carried[k] !== undefined);
      return decodePodTag({
        node: carried[keys.node],
        namespace: carried[keys.namespace],
        name: carried[keys.name],
        uid: carried[keys.uid],
        run: runKey ? carried[runKey] : undefined,
      });
    },
  };
}

/** Key/value pairs as a list of `{ key, value }` (ECS and ECI tags) read as a map. */
export function tagMap(
  list: readonly { key?: string; value?: string }[] | undefined,
): Record<string, string> | undefined {
  return list && Object.fromEntries(list.flatMap((t) => t.key ? [[t.key, t.value ?? ""]] : []));
}

/**
 * A carrier in one line of text: `vkubelet node=<node> pod=<namespace>/<name> uid=<uid>
 * run=<n>`, at most 36 + 253 + 63 + 253 + 36 + 9 = 650 characters (a batch job's comment).
 */
export const podTagText: PodTagCarrier<string> = {
  write: (tag) =>
    `vkubelet node=${tag.node} pod=${tag.namespace}/${tag.name} uid=${tag.uid} run=${tag.run}`,
  read: (carried) => {
    const m = /^vkubelet node=(\S+) pod=([^/\s]+)\/(\S+) uid=(\S+) run=(\d{1,9})$/
      .exec(carried ?? "");
    return m
      ? decodePodTag({ node: m[1], namespace: m[2], name: m[3], uid: m[4], run: m[5] })
      : undefined;
  },
};

/** What a run's object says of its pod's spec, for {@link standInPod}. */
export interface StandInSpec {
  /** The containers, by name (and image where the object keeps it). */
  containers: { name: string; image?: string }[];
  /** The init containers, where the object keeps them. */
  initContainers?: { name: string; image?: string }[];
  /** The pod's restart policy, where the object keeps it; none: the default, Always. */
  restartPolicy?: string;
}

/**
 * The pod an adopted run stands for until the core hands the pod over (createPod): the tag's
 * identity, bound to its node, with the containers (and restart policy) the object keeps.
 */
export function standInPod(tag: PodTag, spec: StandInSpec): Pod {
  const { initContainers, restartPolicy } = spec;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { namespace: tag.namespace, name: tag.name, uid: tag.uid },
    spec: {
      nodeName: tag.node,
      ...(restartPolicy ? { restartPolicy: restartPolicy as RestartPolicy } : {}),
      containers: spec.containers.map(({ name, image }) => ({ name, image })),
      ...(initContainers?.length
        ? { initContainers: initContainers.map(({ name, image }) => ({ name, image })) }
        : {}),
    },
  };
}
