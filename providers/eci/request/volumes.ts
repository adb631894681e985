/**
 * The pod's volumes as ECI volumes: emptyDir as `EmptyDirVolume`; ConfigMap, Secret, downwardAPI
 * and projected volumes (the service-account token among them) as `ConfigFileVolume`s whose
 * files are written into the create request (base64, as ECI wants them). Their contents are read
 * once, at create: ECI cannot change a config file volume of a running group, so a later change
 * of the ConfigMap or Secret, or the token's expiry, is not seen (said in the README). Other
 * volume kinds are refused naming the field.
 * @module
 */
import { type ClaimReader, type NetworkVolume, networkVolume } from "./network_volumes.ts";
import type { KeyToPath, Pod, Volume, VolumeProjection } from "kubernetes-types/core/v1.d.ts";
import {
  InvalidInputError,
  isKubeNotFound,
  type ProviderKubeClient,
  resolveFieldRef,
  TransientError,
} from "../../../provider/mod.ts";

/** One file of a config file volume: its path in the volume, base64 content and mode. */
export interface VolumeFile {
  path: string;
  content: string;
  mode?: number;
}

/** A resolved volume: an emptyDir, or the files of a config file volume. */
export type ResolvedVolume =
  | { name: string; emptyDir: { medium?: string; sizeLimit?: string } }
  | { name: string; files: VolumeFile[]; defaultMode?: number }
  | ({ name: string } & NetworkVolume);

/** What reading a volume needs. */
export interface VolumeSource {
  kube?: Pick<ProviderKubeClient, "configMaps" | "secrets" | "serviceAccounts"> & ClaimReader;
  /** The node's IP, for `status.hostIP` in downwardAPI files. */
  hostIP?: string;
  signal?: AbortSignal;
}

const text = new TextEncoder();

/** Every volume of the pod resolved; throws naming the field for a kind ECI cannot mount. */
export async function resolveVolumes(pod: Pod, source: VolumeSource): Promise<ResolvedVolume[]> {
  const out: ResolvedVolume[] = [];
  for (const [i, v] of (pod.spec?.volumes ?? []).entries()) {
    const field = `spec.volumes[${i}]`;
    if (v.emptyDir) {
      out.push({
        name: v.name,
        emptyDir: { medium: v.emptyDir.medium || undefined, sizeLimit: v.emptyDir.sizeLimit },
      });
      continue;
    }
    const network = await networkVolume(pod.metadata?.namespace ?? "default", v, field, source);
    if (network) {
      out.push({ name: v.name, ...network });
      continue;
    }
    const files = await filesOf(pod, v, field, source);
    if (!files) {
      const kind = Object.keys(v).find((k) => k !== "name") ?? "(none)";
      throw new InvalidInputError(
        `${field}.${kind}: ${kind} volumes are not supported by the eci provider (emptyDir, configMap, secret, downwardAPI, projected, nfs, the alicloud/disk flexVolume and claims of NAS or disk volumes are)`,
      );
    }
    out.push({ name: v.name, files: files.files, defaultMode: files.defaultMode });
  }
  return out;
}

async function filesOf(pod: Pod, v: Volume, field: string, source: VolumeSource) {
  if (v.configMap) {
    const files = await configMapFiles(pod, v.configMap, field, source);
    return { files, defaultMode: v.configMap.defaultMode };
  }
  if (v.secret) {
    const files = await secretFiles(pod, v.secret, field, source);
    return { files, defaultMode: v.secret.defaultMode };
  }
  if (v.downwardAPI) {
    return {
      files: downwardFiles(pod, v.downwardAPI.items ?? [], source),
      defaultMode: v.downwardAPI.defaultMode,
    };
  }
  if (v.projected) {
    const files: VolumeFile[] = [];
    for (const [j, p] of (v.projected.sources ?? []).entries()) {
      files.push(...await projectedFiles(pod, p, `${field}.projected.sources[${j}]`, source));
    }
    return { files, defaultMode: v.projected.defaultMode };
  }
  return undefined;
}

async function projectedFiles(
  pod: Pod,
  p: VolumeProjection,
  field: string,
  source: VolumeSource,
): Promise<VolumeFile[]> {
  if (p.configMap) return await configMapFiles(pod, p.configMap, field, source);
  if (p.secret) return await secretFiles(pod, p.secret, field, source);
  if (p.downwardAPI) return downwardFiles(pod, p.downwardAPI.items ?? [], source);
  if (p.serviceAccountToken) {
    const kube = needKube(source, field);
    const answer = await kube.serviceAccounts.createToken(
      pod.metadata?.namespace ?? "default",
      pod.spec?.serviceAccountName ?? "default",
      {
        spec: {
          audiences: p.serviceAccountToken.audience ? [p.serviceAccountToken.audience] : [],
          expirationSeconds: p.serviceAccountToken.expirationSeconds ?? 3607,
          boundObjectRef: {
            apiVersion: "v1",
            kind: "Pod",
            name: pod.metadata?.name,
            uid: pod.metadata?.uid,
          },
        },
      },
      { signal: source.signal },
    );
    const token = answer.status?.token;
    if (!token) {
      throw new TransientError(`${field}.serviceAccountToken: TokenRequest gave no token`);
    }
    return [{ path: p.serviceAccountToken.path, content: encodeBase64(text.encode(token)) }];
  }
  throw new InvalidInputError(
    `${field}: this projected source is not supported (configMap, secret, downwardAPI and serviceAccountToken are)`,
  );
}

function needKube(source: VolumeSource, field: string) {
  if (!source.kube) {
    throw new TransientError(`${field}: the provider has no Kubernetes client to read it`);
  }
  return source.kube;
}

async function configMapFiles(
  pod: Pod,
  ref: { name?: string; items?: KeyToPath[]; optional?: boolean },
  field: string,
  source: VolumeSource,
): Promise<VolumeFile[]> {
  const kube = needKube(source, field);
  const ns = pod.metadata?.namespace ?? "default";
  const cm = await kube.configMaps.get(ns, ref.name ?? "", { signal: source.signal }).catch(
    (err) => {
      if (isKubeNotFound(err) && ref.optional) return undefined;
      if (isKubeNotFound(err)) {
        throw new TransientError(`${field}: ConfigMap ${ns}/${ref.name} not found; create it`);
      }
      throw err;
    },
  );
  const data: Record<string, Uint8Array> = {};
  for (const [k, v] of Object.entries(cm?.data ?? {})) data[k] = text.encode(v);
  for (const [k, v] of Object.entries(cm?.binaryData ?? {})) {
    data[k] = Uint8Array.from(atob(v), (c) => c.charCodeAt(0));
  }
  return pick(data, ref.items, field, `ConfigMap ${ns}/${ref.name}`);
}

async function secretFiles(
  pod: Pod,
  ref: { name?: string; secretName?: string; items?: KeyToPath[]; optional?: boolean },
  field: string,
  source: VolumeSource,
): Promise<VolumeFile[]> {
  const kube = needKube(source, field);
  const ns = pod.metadata?.namespace ?? "default";
  const name = ref.secretName ?? ref.name ?? "";
  const secret = await kube.secrets.get(ns, name, { signal: source.signal }).catch((err) => {
    if (isKubeNotFound(err) && ref.optional) return undefined;
    if (isKubeNotFound(err)) {
      throw new TransientError(`${field}: Secret ${ns}/${name} not found; create it`);
    }
    throw err;
  });
  const data: Record<string, Uint8Array> = {};
  for (const [k, v] of Object.entries(secret?.data ?? {})) {
    data[k] = Uint8Array.from(atob(v), (c) => c.charCodeAt(0));
  }
  for (const [k, v] of Object.entries(secret?.stringData ?? {})) data[k] = text.encode(v);
  return pick(data, ref.items, field, `Secret ${ns}/${name}`);
}

/** Every key as a file, or the listed ones at their paths (a missing listed key is an error). */
function pick(
  data: Record<string, Uint8Array>,
  items: KeyToPath[] | undefined,
  field: string,
  what: string,
): VolumeFile[] {
  if (!items?.length) {
    return Object.entries(data).map(([path, bytes]) => ({ path, content: encodeBase64(bytes) }));
  }
  return items.map((item) => {
    const bytes = data[item.key];
    if (!bytes) {
      throw new TransientError(`${field}: ${what} has no key ${item.key}; add it or fix items`);
    }
    return { path: item.path, content: encodeBase64(bytes), mode: item.mode };
  });
}

function downwardFiles(
  pod: Pod,
  items: NonNullable<Volume["downwardAPI"]>["items"] & object,
  source: VolumeSource,
): VolumeFile[] {
  return items.map((item) => {
    if (!item.fieldRef) {
      throw new InvalidInputError(
        `downwardAPI item ${item.path}: only fieldRef items are supported by the eci provider`,
      );
    }
    const value = resolveFieldRef(pod, item.fieldRef, {
      podIps: [],
      hostIps: source.hostIP ? [source.hostIP] : [],
    });
    return { path: item.path, content: encodeBase64(text.encode(value)), mode: item.mode };
  });
}

/** Bytes as standard base64. */
export function encodeBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}
