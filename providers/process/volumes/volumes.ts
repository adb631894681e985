/**
 * Volumes materialised under the pod's directory: emptyDir, configMap, secret (items, modes,
 * optional), downwardAPI, projected (configMap, secret, downwardAPI, serviceAccountToken from a
 * TokenRequest refreshed at 80 % of its lifetime, ./token_cache.ts), hostPath only when the config
 * enables it, and persistentVolumeClaim through a hostPath or local PersistentVolume
 * (./claim_volume.ts; the volume's directory becomes a link to it). ConfigMap/Secret contents come from a {@link VolumeSource}; updates are written
 * atomically (./atomic_writer.ts) on every {@link VolumeSet.sync}.
 * @module
 */
import type {
  ConfigMap,
  KeyToPath,
  Pod,
  Secret,
  Volume,
  VolumeProjection,
} from "kubernetes-types/core/v1.d.ts";
import type { TokenRequest } from "kubernetes-types/authentication/v1.d.ts";
import {
  InvalidInputError,
  resolveResourceFieldRef,
  resolveVolumeFieldRef,
  TransientError,
} from "../../../provider/mod.ts";
import { checkRelativePath, type VolumeFile, writeAtomically } from "./atomic_writer.ts";
import {
  createHostPath,
  hostPathPrefixProblem,
  hostPathSyntaxProblem,
  isUnderPrefix,
  isUnderRealPrefix,
} from "./host_path.ts";
import { claimDirectory, type ClaimSource } from "./claim_volume.ts";
import { TokenCache } from "./token_cache.ts";
import type { PodPaths } from "../state/state.ts";
import { dirname } from "node:path";

/**
 * Where ConfigMap and Secret contents, service-account tokens and claims come from (the
 * apiserver).
 */
export interface VolumeSource extends ClaimSource {
  /** The ConfigMap, or `undefined` if it does not exist. */
  getConfigMap(
    namespace: string,
    name: string,
    signal?: AbortSignal,
  ): Promise<ConfigMap | undefined>;
  /** The Secret, or `undefined` if it does not exist. */
  getSecret(namespace: string, name: string, signal?: AbortSignal): Promise<Secret | undefined>;
  /** A TokenRequest for the service account, answered with `status.token`. */
  createToken(
    namespace: string,
    serviceAccount: string,
    request: TokenRequest,
    signal?: AbortSignal,
  ): Promise<TokenRequest>;
}

/** What volume code needs besides the pod. */
export interface VolumeContext {
  paths: PodPaths;
  source?: VolumeSource;
  hostPath: { enabled: boolean; allowedPrefixes: string[] };
  tokenExpirationSeconds: number;
  allocatable: Record<string, string>;
  now: () => number;
}

const encoder = new TextEncoder();
const SUPPORTED = [
  "emptyDir",
  "configMap",
  "secret",
  "downwardAPI",
  "projected",
  "hostPath",
  "persistentVolumeClaim",
];

/** Throws {@link InvalidInputError} for a volume this provider can never provide. */
export function validateVolume(volume: Volume, ctx: Pick<VolumeContext, "hostPath">): void {
  const kind = Object.keys(volume).find((k) => k !== "name");
  if (!kind || !SUPPORTED.includes(kind)) {
    throw new InvalidInputError(
      `volume ${volume.name}: type ${
        kind ?? "(none)"
      } is not supported by the process provider; use ${SUPPORTED.join(", ")}`,
    );
  }
  if (volume.hostPath) {
    const path = volume.hostPath.path;
    const allowed = ctx.hostPath.allowedPrefixes;
    if (!ctx.hostPath.enabled) {
      throw new InvalidInputError(
        `volume ${volume.name}: hostPath volumes are disabled; set hostPath.enabled in the provider config`,
      );
    }
    const syntax = hostPathSyntaxProblem(path);
    if (syntax) throw new InvalidInputError(`volume ${volume.name}: ${syntax}`);
    if (allowed.length > 0 && !allowed.some((p) => isUnderPrefix(path, p))) {
      throw new InvalidInputError(
        `volume ${volume.name}: hostPath ${path} is outside hostPath.allowedPrefixes (${
          allowed.join(", ")
        })`,
      );
    }
  }
}

/** A pod's volumes: host paths to mount, and the refresh of their contents. */
export class VolumeSet {
  readonly #pod: Pod;
  readonly #ctx: VolumeContext;
  readonly #tokens: TokenCache;
  /** Claim volumes already linked to their PersistentVolume's directory (a bound claim keeps it). */
  readonly #claims = new Set<string>();

  constructor(pod: Pod, ctx: VolumeContext) {
    this.#pod = pod;
    this.#ctx = ctx;
    this.#tokens = new TokenCache({
      source: ctx.source,
      defaultExpirationSeconds: ctx.tokenExpirationSeconds,
      now: ctx.now,
    });
  }

  /**
   * The host path a volume is mounted from, symlinks resolved. A hostPath or claim whose path
   * now resolves outside `hostPath.allowedPrefixes` (a symlink raced in since the sync checked
   * it) is given as written: the view's set-up refuses a source whose path is not its resolved
   * path (../launch/safe_walk.ts), and a subPath's volume must be at its resolved path too.
   */
  hostPathOf(name: string): string {
    const volume = this.#pod.spec?.volumes?.find((v) => v.name === name);
    const path = volume?.hostPath?.path ?? this.#ctx.paths.volume(name);
    let real: string;
    try {
      real = Deno.realPathSync(path);
    } catch {
      return path;
    }
    const allowed = this.#ctx.hostPath.allowedPrefixes;
    if ((volume?.hostPath || volume?.persistentVolumeClaim) && !isUnderRealPrefix(real, allowed)) {
      return path;
    }
    return real;
  }

  /** True if `name` must be mounted read-only whatever the mount says (kubelet does so). */
  isReadOnly(name: string): boolean {
    const v = this.#pod.spec?.volumes?.find((v) => v.name === name);
    return !!(v?.configMap || v?.secret || v?.downwardAPI || v?.projected ||
      v?.persistentVolumeClaim?.readOnly);
  }

  /**
   * Writes every volume's content; throws {@link TransientError} while a source is missing, and
   * after writing everything else when a token refresh failed (the old token stays meanwhile).
   */
  async sync(pod: Pod, signal?: AbortSignal): Promise<void> {
    const failures = this.#tokens.startSync();
    for (const volume of pod.spec?.volumes ?? []) {
      await this.#syncOne(pod, volume, signal);
    }
    if (failures.length > 0) throw new TransientError(failures.join("; "));
  }

  /** The earliest time a token must be renewed (or a failed renewal retried), if any. */
  nextTokenRefresh(): number | undefined {
    return this.#tokens.nextRefresh();
  }

  async #syncOne(pod: Pod, volume: Volume, signal?: AbortSignal): Promise<void> {
    const dir = this.#ctx.paths.volume(volume.name);
    if (volume.emptyDir) return await makeEmptyDir(dir);
    if (volume.hostPath) return await this.#hostPath(volume);
    if (volume.persistentVolumeClaim) return await this.#claim(pod, volume, signal);
    let files: VolumeFile[];
    if (volume.configMap || volume.secret) {
      files = await this.#keyFiles(pod, volume, volume.configMap ? "configMap" : "secret", signal);
    } else if (volume.downwardAPI) {
      files = this.#downward(pod, volume.downwardAPI.items ?? [], volume.downwardAPI.defaultMode);
    } else if (volume.projected) {
      files = [];
      for (const source of volume.projected.sources ?? []) {
        files.push(...await this.#projection(pod, volume, source, signal));
      }
    } else return;
    await writeAtomically(dir, files, this.#ctx.now());
  }

  async #hostPath(volume: Volume): Promise<void> {
    const { path, type } = volume.hostPath!;
    // Checked again on the file system, before anything is created: a symlink under an
    // allowed prefix may point anywhere.
    const outside = await hostPathPrefixProblem(path, this.#ctx.hostPath.allowedPrefixes);
    if (outside) throw new InvalidInputError(`volume ${volume.name}: ${outside}`);
    if (type === "DirectoryOrCreate" || type === "FileOrCreate") {
      // Made from the allowed prefix down, never following a link (./host_path.ts).
      const problem = await createHostPath(path, type, this.#ctx.hostPath.allowedPrefixes);
      if (problem) throw new TransientError(`volume ${volume.name}: ${problem}`);
    }
    try {
      const info = await Deno.stat(path);
      if (type === "Directory" && !info.isDirectory) throw new Error("not a directory");
      if (type === "File" && !info.isFile) throw new Error("not a file");
    } catch (err) {
      throw new TransientError(`hostPath ${path} for volume ${volume.name} is not usable: ${err}`);
    }
  }

  /** Links the volume's directory to the claim's PersistentVolume directory, once. */
  async #claim(pod: Pod, volume: Volume, signal?: AbortSignal): Promise<void> {
    if (this.#claims.has(volume.name)) return;
    const target = await claimDirectory(pod.metadata?.namespace ?? "default", volume, {
      source: this.#ctx.source,
      allowedPrefixes: this.#ctx.hostPath.allowedPrefixes,
      signal,
    });
    const link = this.#ctx.paths.volume(volume.name);
    const current = await Deno.readLink(link).catch(() => undefined);
    if (current !== target) {
      await Deno.mkdir(dirname(link), { recursive: true });
      await Deno.remove(link).catch(() => {});
      await Deno.symlink(target, link);
    }
    this.#claims.add(volume.name);
  }

  async #keyFiles(
    pod: Pod,
    volume: Volume | VolumeProjection,
    kind: "configMap" | "secret",
    signal?: AbortSignal,
  ): Promise<VolumeFile[]> {
    const spec = kind === "configMap" ? volume.configMap! : volume.secret!;
    const name = "name" in spec ? spec.name : (spec as { secretName?: string }).secretName;
    const defaultMode = ("defaultMode" in spec ? spec.defaultMode : undefined) ??
      (volume as Volume).projected?.defaultMode ?? 0o644;
    const namespace = pod.metadata?.namespace ?? "default";
    if (!this.#ctx.source) {
      throw new TransientError(
        `${kind} ${name}: the provider has no Kubernetes client to read it (no kube in ProviderDeps)`,
      );
    }
    const object = kind === "configMap"
      ? await this.#ctx.source.getConfigMap(namespace, name ?? "", signal)
      : await this.#ctx.source.getSecret(namespace, name ?? "", signal);
    if (!object) {
      if (spec.optional) return [];
      throw new TransientError(`${kind} "${name}" not found in namespace ${namespace}`);
    }
    const data = contentsOf(object, kind);
    return itemsOrAll(data, spec.items, defaultMode, `${kind} ${name}`, spec.optional);
  }

  #downward(pod: Pod, items: NonNullable<Volume["downwardAPI"]>["items"], mode?: number) {
    return (items ?? []).map((item): VolumeFile => {
      const problem = checkRelativePath(item.path);
      if (problem) throw new InvalidInputError(`downwardAPI item: ${problem}`);
      // The same resolvers as env vars (provider/downward_api.ts), so both show one value.
      let value: string;
      if (item.fieldRef) value = resolveVolumeFieldRef(pod, item.fieldRef);
      else if (item.resourceFieldRef) {
        value = resolveResourceFieldRef(pod, item.resourceFieldRef, {
          allocatable: this.#ctx.allocatable,
        });
      } else {
        throw new InvalidInputError(
          `downwardAPI item ${item.path}: set fieldRef or resourceFieldRef`,
        );
      }
      return { path: item.path, data: encoder.encode(value), mode: item.mode ?? mode ?? 0o644 };
    });
  }

  async #projection(
    pod: Pod,
    volume: Volume,
    source: VolumeProjection,
    signal?: AbortSignal,
  ): Promise<VolumeFile[]> {
    const mode = volume.projected?.defaultMode ?? 0o644;
    if (source.configMap) return await this.#keyFiles(pod, source, "configMap", signal);
    if (source.secret) return await this.#keyFiles(pod, source, "secret", signal);
    if (source.downwardAPI) return this.#downward(pod, source.downwardAPI.items, mode);
    if (source.serviceAccountToken) {
      const token = await this.#tokens.get(pod, {
        volume: volume.name,
        spec: source.serviceAccountToken,
        signal,
      });
      return [{ path: source.serviceAccountToken.path, data: encoder.encode(token), mode }];
    }
    throw new InvalidInputError(
      `volume ${volume.name}: this projected source is not supported (configMap, secret, downwardAPI and serviceAccountToken are)`,
    );
  }
}

/** The keys of a ConfigMap or Secret as bytes (a Secret's `data` is base64). */
function contentsOf(object: ConfigMap | Secret, kind: "configMap" | "secret") {
  const out = new Map<string, Uint8Array>();
  const data = object.data ?? {};
  const isSecret = kind === "secret";
  for (const [k, v] of Object.entries(data)) {
    out.set(k, isSecret ? base64(v) : encoder.encode(v));
  }
  for (const [k, v] of Object.entries((object as ConfigMap).binaryData ?? {})) {
    out.set(k, base64(v));
  }
  for (const [k, v] of Object.entries((object as Secret).stringData ?? {})) {
    out.set(k, encoder.encode(v));
  }
  return out;
}

function base64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

function itemsOrAll(
  data: Map<string, Uint8Array>,
  items: KeyToPath[] | undefined,
  defaultMode: number,
  what: string,
  optional: boolean | undefined,
): VolumeFile[] {
  if (!items || items.length === 0) {
    return [...data].map(([path, bytes]) => ({ path, data: bytes, mode: defaultMode }));
  }
  const out: VolumeFile[] = [];
  for (const item of items) {
    const problem = checkRelativePath(item.path);
    if (problem) throw new InvalidInputError(`${what}: item ${item.key}: ${problem}`);
    const bytes = data.get(item.key);
    if (!bytes) {
      if (optional) continue;
      throw new TransientError(`${what} has no key ${item.key}`);
    }
    out.push({ path: item.path, data: bytes, mode: item.mode ?? defaultMode });
  }
  return out;
}

/**
 * Creates an emptyDir: mode 0777 whatever the umask, so that any user of the pod can write it,
 * as the kubelet does (kubernetes/kubernetes pkg/volume/emptydir/empty_dir.go `setupDir`, `perm
 * os.FileMode = 0777`); once only, so that a mode the pod set later stays.
 */
async function makeEmptyDir(dir: string): Promise<void> {
  try {
    await Deno.mkdir(dir, { recursive: false });
  } catch (err) {
    if (err instanceof Deno.errors.AlreadyExists) return;
    if (!(err instanceof Deno.errors.NotFound)) throw err;
    await Deno.mkdir(dir, { recursive: true });
  }
  await Deno.chmod(dir, 0o777);
}
