/**
 * A pod's volumes as ACI volumes. emptyDir stays emptyDir; Secret, ConfigMap, downwardAPI and
 * projected volumes (the service-account token volume every pod gets included) become ACI
 * `secret` volumes, whose files are written once when the group starts: ACI cannot change them
 * later, so a changed Secret or a renewed token reaches the pod only when its group is made
 * again. Azure Files and gitRepo are ACI's own (`./azure_volumes.ts`). Anything else (hostPath,
 * persistentVolumeClaim, ...) is refused, naming the volume and what ACI can mount.
 * @module
 */
import type { Pod, Volume as KubeVolume } from "kubernetes-types/core/v1.d.ts";
import {
  InvalidInputError,
  isKubeNotFound,
  type ProviderKubeClient,
  resolveVolumeFieldRef,
} from "../../provider/mod.ts";
import {
  type AciAzureFile,
  type AciGitRepo,
  AZURE_FILE_DRIVER,
  azureFileOf,
  gitRepoOf,
} from "./azure_volumes.ts";

/** ACI's `Volume`, as far as vkubelet writes it. */
export interface AciVolume {
  name: string;
  emptyDir?: Record<string, never>;
  /** File name → base64 content. */
  secret?: Record<string, string>;
  azureFile?: AciAzureFile;
  gitRepo?: AciGitRepo;
}

/** What reading the pod's Secrets, ConfigMaps and tokens needs. */
export interface VolumeSources {
  kube?: ProviderKubeClient;
  signal?: AbortSignal;
}

const b64 = (text: string) => btoa(String.fromCharCode(...new TextEncoder().encode(text)));

function fileName(volume: string, path: string): string {
  if (path.includes("/")) {
    throw new InvalidInputError(
      `spec.volumes[${volume}]: item path ${path} has a directory; ACI secret volumes hold flat files only, so use a plain file name`,
    );
  }
  return path;
}

function needKube(sources: VolumeSources, volume: string) {
  if (!sources.kube) {
    throw new InvalidInputError(`spec.volumes[${volume}]: vkubelet has no API client to read it`);
  }
  return sources.kube;
}

/** Keys (or `items`) of a Secret's or ConfigMap's data as base64 file contents. */
function pick(
  volume: string,
  data: Record<string, string>,
  items: { key: string; path: string }[] | undefined,
): Record<string, string> {
  if (!items?.length) return { ...data };
  const out: Record<string, string> = {};
  for (const item of items) {
    if (data[item.key] !== undefined) out[fileName(volume, item.path)] = data[item.key];
  }
  return out;
}

async function secretFiles(
  volume: string,
  namespace: string,
  ref: { name?: string; secretName?: string; items?: { key: string; path: string }[] },
  optional: boolean,
  sources: VolumeSources,
): Promise<Record<string, string>> {
  const name = ref.secretName ?? ref.name ?? "";
  try {
    const secret = await needKube(sources, volume).secrets.get(namespace, name, sources);
    return pick(volume, secret.data ?? {}, ref.items);
  } catch (err) {
    if (optional && isKubeNotFound(err)) return {};
    throw err;
  }
}

async function configMapFiles(
  volume: string,
  namespace: string,
  ref: { name?: string; items?: { key: string; path: string }[] },
  optional: boolean,
  sources: VolumeSources,
): Promise<Record<string, string>> {
  try {
    const map = await needKube(sources, volume).configMaps.get(namespace, ref.name ?? "", sources);
    const data = Object.fromEntries(Object.entries(map.data ?? {}).map(([k, v]) => [k, b64(v)]));
    return pick(volume, { ...data, ...map.binaryData }, ref.items);
  } catch (err) {
    if (optional && isKubeNotFound(err)) return {};
    throw err;
  }
}

async function projectedFiles(pod: Pod, v: KubeVolume, sources: VolumeSources) {
  const namespace = pod.metadata?.namespace ?? "default";
  const files: Record<string, string> = {};
  for (const source of v.projected?.sources ?? []) {
    if (source.secret) {
      Object.assign(
        files,
        await secretFiles(v.name, namespace, source.secret, !!source.secret.optional, sources),
      );
    } else if (source.configMap) {
      Object.assign(
        files,
        await configMapFiles(
          v.name,
          namespace,
          source.configMap,
          !!source.configMap.optional,
          sources,
        ),
      );
    } else if (source.downwardAPI) {
      Object.assign(files, downwardFiles(pod, v.name, source.downwardAPI.items ?? []));
    } else if (source.serviceAccountToken) {
      const { path, audience, expirationSeconds } = source.serviceAccountToken;
      const account = pod.spec?.serviceAccountName ?? "default";
      const issued = await needKube(sources, v.name).serviceAccounts.createToken(
        namespace,
        account,
        {
          spec: {
            audiences: audience ? [audience] : [],
            expirationSeconds: expirationSeconds ?? 3607,
            boundObjectRef: {
              apiVersion: "v1",
              kind: "Pod",
              name: pod.metadata?.name,
              uid: pod.metadata?.uid,
            },
          },
        },
        sources,
      );
      files[fileName(v.name, path)] = b64(issued.status?.token ?? "");
    } else {
      throw new InvalidInputError(
        `spec.volumes[${v.name}]: this projected source is not supported by ACI; use secret, configMap, downwardAPI or serviceAccountToken`,
      );
    }
  }
  return files;
}

function downwardFiles(
  pod: Pod,
  volume: string,
  items: { path: string; fieldRef?: { fieldPath: string } }[],
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of items) {
    if (!item.fieldRef) {
      throw new InvalidInputError(
        `spec.volumes[${volume}]: downwardAPI resourceFieldRef items are not supported by the aci provider; use fieldRef`,
      );
    }
    out[fileName(volume, item.path)] = b64(resolveVolumeFieldRef(pod, item.fieldRef));
  }
  return out;
}

/** The pod's volumes as ACI volumes; reads what they name through `sources.kube`. */
export async function podVolumes(pod: Pod, sources: VolumeSources): Promise<AciVolume[]> {
  const namespace = pod.metadata?.namespace ?? "default";
  const out: AciVolume[] = [];
  for (const v of pod.spec?.volumes ?? []) {
    if (v.emptyDir) {
      out.push({ name: v.name, emptyDir: {} });
    } else if (v.secret) {
      const files = await secretFiles(v.name, namespace, v.secret, !!v.secret.optional, sources);
      out.push({ name: v.name, secret: files });
    } else if (v.configMap) {
      const files = await configMapFiles(
        v.name,
        namespace,
        v.configMap,
        !!v.configMap.optional,
        sources,
      );
      out.push({ name: v.name, secret: files });
    } else if (v.downwardAPI) {
      out.push({ name: v.name, secret: downwardFiles(pod, v.name, v.downwardAPI.items ?? []) });
    } else if (v.projected) {
      out.push({ name: v.name, secret: await projectedFiles(pod, v, sources) });
    } else if (v.azureFile || v.csi) {
      out.push({ name: v.name, azureFile: await azureFileOf(v, namespace, sources) });
    } else if (v.gitRepo) {
      out.push({ name: v.name, gitRepo: gitRepoOf(v) });
    } else {
      const kind = Object.keys(v).find((k) => k !== "name") ?? "unknown";
      throw new InvalidInputError(
        `spec.volumes[${v.name}]: ${kind} volumes are not supported by ACI, which mounts only its own volume kinds (api-version 2023-05-01 Volume: emptyDir, secret, azureFile, gitRepo); use emptyDir, secret, configMap, downwardAPI, projected, azureFile, csi (${AZURE_FILE_DRIVER}) or gitRepo`,
      );
    }
  }
  return out;
}

/**
 * The pod's imagePullSecrets as ACI registry credentials: each `kubernetes.io/dockerconfigjson`
 * (or `.dockercfg`) Secret's registries, with user name and password.
 */
export async function registryCredentials(
  pod: Pod,
  sources: VolumeSources,
): Promise<{ server: string; username: string; password: string }[]> {
  const out: { server: string; username: string; password: string }[] = [];
  for (const ref of pod.spec?.imagePullSecrets ?? []) {
    if (!ref.name || !sources.kube) continue;
    let secret;
    try {
      secret = await sources.kube.secrets.get(
        pod.metadata?.namespace ?? "default",
        ref.name,
        sources,
      );
    } catch (err) {
      // The kubelet pulls without a missing pull secret and warns (kuberuntime_manager.go).
      if (isKubeNotFound(err)) continue;
      throw err;
    }
    const raw = secret.data?.[".dockerconfigjson"] ?? secret.data?.[".dockercfg"];
    if (!raw) continue;
    const parsed = JSON.parse(
      new TextDecoder().decode(Uint8Array.from(atob(raw), (c) => c.charCodeAt(0))),
    );
    const auths: Record<string, { username?: string; password?: string; auth?: string }> =
      parsed.auths ?? parsed;
    for (const [server, entry] of Object.entries(auths)) {
      let { username = "", password = "" } = entry;
      if (!username && entry.auth) [username, password] = atob(entry.auth).split(/:(.*)/s);
      out.push({
        server: server.replace(/^https?:\/\//, "").replace(/\/.*$/, ""),
        username,
        password,
      });
    }
  }
  return out;
}
