/**
 * interLink's wire format, as its Go types marshal it (interlink-hq/interLink, commit
 * f632175701d78b604138ce2e1e38af13d1f7546b, pkg/interlink/types.go): the JSON names are the
 * struct tags, not the published OpenAPI document's. And the bodies each target receives:
 * interLink's API server takes `PodCreateRequests` on `/create`; a plugin takes what the API
 * server forwards, `RetrievedPodData` with each container's ConfigMaps, Secrets and projected
 * volumes (pkg/interlink/api/func.go `getData`, `retrieveData`).
 * @module
 */
import type {
  ConfigMap,
  Container,
  ContainerStatus,
  Pod,
  Secret,
} from "kubernetes-types/core/v1.d.ts";

/** `PodCreateRequests`: what the virtual kubelet POSTs to the API server's `/create`. */
export interface PodCreateRequests {
  pod: Pod;
  configmaps: ConfigMap[];
  secrets: Secret[];
  /** One ConfigMap per projected volume, named after the volume: file path → content. */
  projectedvolumesmaps: ConfigMap[];
  jobscriptURL: string;
}

/** `RetrievedContainer`: one container's volume data, as a plugin receives it. */
export interface RetrievedContainer {
  name: string;
  configMaps: ConfigMap[] | null;
  projectedvolumemaps: ConfigMap[] | null;
  secrets: Secret[] | null;
  emptyDirs: string[] | null;
}

/** `RetrievedPodData`: what the API server forwards to a plugin's `/create`. */
export interface RetrievedPodData {
  pod: Pod;
  container: RetrievedContainer[];
}

/** `CreateStruct`: the answer to `/create`. */
export interface CreateStruct {
  PodUID: string;
  PodJID: string;
}

/** `PodStatus`: one pod in the answer to `/status`. */
export interface InterlinkPodStatus {
  name: string;
  UID: string;
  namespace: string;
  JID?: string;
  containers?: ContainerStatus[] | null;
  initContainers?: ContainerStatus[] | null;
  /** vkubelet's extension: the node that created the pod (ignored by Go decoders). */
  node?: string;
}

/** `LogStruct` with its `ContainerLogOpts`: the body of `/getLogs`. */
export interface LogStruct {
  Namespace: string;
  PodUID: string;
  PodName: string;
  ContainerName: string;
  Opts: {
    Tail: number;
    Bytes: number;
    Timestamps: boolean;
    Follow: boolean;
    Previous: boolean;
    SinceSeconds: number;
    /** Go's zero `time.Time` when unset. */
    SinceTime: string;
  };
}

/** `PingResponse`: an optional JSON answer to a ping. */
export interface PingResponse {
  status?: string;
  resources?: {
    cpu?: string;
    memory?: string;
    pods?: string;
    accelerators?: { resourceType: string; available: string }[];
  };
  taints?: { key: string; value?: string; effect: string }[];
}

/** The objects a pod's volumes refer to, fetched by `../request/volumes.ts`. */
export interface PodObjects {
  configMaps: ConfigMap[];
  secrets: Secret[];
  projected: ConfigMap[];
}

/** The API server's `/create` body. */
export function createRequestFor(
  pod: Pod,
  objects: PodObjects,
  jobScriptBuilderURL = "",
): PodCreateRequests {
  return {
    pod,
    configmaps: objects.configMaps,
    secrets: objects.secrets,
    projectedvolumesmaps: objects.projected,
    jobscriptURL: jobScriptBuilderURL,
  };
}

/**
 * A plugin's `/create` body: per container (init containers first), the objects of the volumes
 * it mounts. Empty lists are `null`, as Go marshals a nil slice.
 */
export function retrievedPodDataFor(pod: Pod, objects: PodObjects): RetrievedPodData {
  const containers: Container[] = [
    ...(pod.spec?.initContainers ?? []),
    ...(pod.spec?.containers ?? []),
  ];
  const volumes = new Map((pod.spec?.volumes ?? []).map((v) => [v.name, v]));
  const container = containers.map((c): RetrievedContainer => {
    const configMaps: ConfigMap[] = [];
    const secrets: Secret[] = [];
    const projected: ConfigMap[] = [];
    for (const mount of c.volumeMounts ?? []) {
      const volume = volumes.get(mount.name);
      if (volume?.configMap) {
        const found = objects.configMaps.find((m) => m.metadata?.name === volume.configMap!.name);
        if (found) configMaps.push(found);
      } else if (volume?.secret) {
        const found = objects.secrets.find((s) => s.metadata?.name === volume.secret!.secretName);
        if (found) secrets.push(found);
      } else if (volume?.projected) {
        const found = objects.projected.find((m) => m.metadata?.name === volume.name);
        if (found) projected.push(found);
      }
    }
    return {
      name: c.name,
      configMaps: configMaps.length ? configMaps : null,
      projectedvolumemaps: projected.length ? projected : null,
      secrets: secrets.length ? secrets : null,
      emptyDirs: null,
    };
  });
  return { pod, container };
}

/** Go's zero `time.Time`, which `ContainerLogOpts.SinceTime` carries when unset. */
export const GO_ZERO_TIME = "0001-01-01T00:00:00Z";

/** A `/create` answer of HTTP 200 that names no job: the plugin failed to make one. */
export class CreateRefusedError extends Error {
  override name = "CreateRefusedError";
}

/**
 * Parses a `/create` answer: one `CreateStruct`, or a list of them (older API servers); the job
 * ID of `uid`, `""` when the answer names none. An empty body is the SLURM plugin's failure: when
 * its job script cannot be made it returns without writing (interlink-hq/interlink-slurm-plugin,
 * commit f8451d93e063b7addc606d227a525fe614d91958, pkg/slurm/Create.go:220-224), and interLink's
 * API server passes the empty 200 on (pkg/interlink/api/create.go:166). An object with an `error`
 * or `message` and no job is a plugin's error in JSON. Both throw {@link CreateRefusedError}.
 */
export function jobIdOf(text: string, uid: string): string {
  if (text.trim() === "") {
    throw new CreateRefusedError(
      "the answer is HTTP 200 with an empty body: the plugin did not make the job (the SLURM plugin answers so when its job script cannot be made); see the plugin's log",
    );
  }
  const parsed: unknown = JSON.parse(text);
  const list = Array.isArray(parsed) ? parsed : [parsed];
  for (const item of list) {
    if (item && typeof item === "object" && (item as CreateStruct).PodUID === uid) {
      return String((item as CreateStruct).PodJID ?? "");
    }
  }
  const said = list.map((item) =>
    item && typeof item === "object" && !("PodJID" in item)
      ? (item as { error?: unknown; message?: unknown }).error ??
        (item as { message?: unknown }).message
      : undefined
  ).find((m) => typeof m === "string" && m !== "");
  if (said !== undefined) throw new CreateRefusedError(`the plugin answered: ${said}`);
  return "";
}

/**
 * True when a `/status` entry proves that the plugin holds a job for the pod: a job ID, or a
 * container with a state. The SLURM plugin answers a pod it has no job for with one entry per
 * container whose state is empty (`{}`) and no JID (pkg/slurm/Status.go:471-477); a queued job
 * has `{"waiting": {}}` (Status.go:309-314), which counts.
 */
export function provesJob(status: InterlinkPodStatus | undefined): boolean {
  if (!status) return false;
  if (status.JID) return true;
  return [...status.containers ?? [], ...status.initContainers ?? []].some((c) => {
    const state = c?.state;
    return !!state && (!!state.running || !!state.terminated || !!state.waiting);
  });
}

/** Parses a `/status` answer; throws a TypeError naming what is wrong. */
export function parseStatuses(text: string): InterlinkPodStatus[] {
  const parsed: unknown = JSON.parse(text || "[]");
  if (parsed === null) return [];
  if (!Array.isArray(parsed)) {
    throw new TypeError(`expected a JSON array of pod statuses, got ${typeof parsed}`);
  }
  for (const item of parsed) {
    if (!item || typeof item !== "object" || typeof item.UID !== "string") {
      throw new TypeError(`expected pod statuses with a string UID, got ${JSON.stringify(item)}`);
    }
  }
  return parsed as InterlinkPodStatus[];
}
