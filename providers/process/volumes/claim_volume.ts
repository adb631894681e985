/**
 * persistentVolumeClaim volumes: the claim is resolved to its bound PersistentVolume (as the
 * kubelet's desired-state populator does, kubernetes/kubernetes
 * pkg/kubelet/volumemanager/populator/desired_state_of_world_populator.go `getPVCExtractPV`),
 * and the volume's `hostPath.path` or `local.path` directory is what the containers get. Other
 * volume types of a PV (CSI, NFS, cloud disks) need a real kubelet's plugins and are refused.
 * The path passes the same `hostPath.allowedPrefixes` checks as a hostPath volume; it needs no
 * `hostPath.enabled`, since PersistentVolumes are made by whoever may create cluster-scoped
 * objects, not by the pod's author.
 * @module
 */
import type {
  PersistentVolume,
  PersistentVolumeClaim,
  Volume,
} from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError, TransientError } from "../../../provider/mod.ts";
import { hostPathPrefixProblem, hostPathSyntaxProblem } from "./host_path.ts";

/** Where a claim and its volume are read (vkubelet's client; a node may read its pods' ones). */
export interface ClaimSource {
  /** The claim, or `undefined` if it does not exist. */
  getPersistentVolumeClaim?(
    namespace: string,
    name: string,
    signal?: AbortSignal,
  ): Promise<PersistentVolumeClaim | undefined>;
  /** The PersistentVolume, or `undefined` if it does not exist. */
  getPersistentVolume?(name: string, signal?: AbortSignal): Promise<PersistentVolume | undefined>;
}

/**
 * The host directory behind the pod's claim volume. Throws {@link TransientError} while the
 * claim is missing or not bound (the pod waits, as a kubelet's does) and
 * {@link InvalidInputError} for a volume this provider can never mount.
 */
export async function claimDirectory(
  namespace: string,
  volume: Volume,
  options: { source?: ClaimSource; allowedPrefixes: string[]; signal?: AbortSignal },
): Promise<string> {
  const claimName = volume.persistentVolumeClaim!.claimName;
  const what = `volume ${volume.name}: PersistentVolumeClaim ${namespace}/${claimName}`;
  const { source, signal } = options;
  if (!source?.getPersistentVolumeClaim || !source.getPersistentVolume) {
    throw new TransientError(
      `${what}: the provider has no Kubernetes client to read it (no kube in ProviderDeps)`,
    );
  }
  const claim = await source.getPersistentVolumeClaim(namespace, claimName, signal);
  if (!claim) throw new TransientError(`${what} not found`);
  const volumeName = claim.spec?.volumeName;
  if (claim.status?.phase !== "Bound" || !volumeName) {
    throw new TransientError(`${what} is not bound yet (phase ${claim.status?.phase ?? "none"})`);
  }
  const pv = await source.getPersistentVolume(volumeName, signal);
  if (!pv) throw new TransientError(`${what}: its PersistentVolume ${volumeName} not found`);
  const path = pv.spec?.hostPath?.path ?? pv.spec?.local?.path;
  if (!path) {
    throw new InvalidInputError(
      `${what}: PersistentVolume ${volumeName} is neither hostPath nor local; the process provider ` +
        "mounts only host directories (give the claim a StorageClass whose volumes are hostPath or local)",
    );
  }
  const syntax = hostPathSyntaxProblem(path);
  if (syntax) throw new InvalidInputError(`${what}: PersistentVolume ${volumeName}: ${syntax}`);
  const outside = await hostPathPrefixProblem(path, options.allowedPrefixes);
  if (outside) {
    throw new InvalidInputError(`${what}: PersistentVolume ${volumeName}: ${outside}`);
  }
  try {
    if (!(await Deno.stat(path)).isDirectory) throw new Error("not a directory");
  } catch (err) {
    throw new TransientError(`${what}: PersistentVolume ${volumeName} path ${path}: ${err}`);
  }
  return path;
}
