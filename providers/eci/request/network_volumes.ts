/**
 * The network and block volumes ECI mounts itself (CreateContainerGroup `Volume.N.Type`
 * `NFSVolume` and `DiskVolume` in Alibaba's metadata): an `nfs` volume, an Alibaba Cloud disk
 * (the `alicloud/disk` flexVolume, or a claim bound to the disk CSI driver's volume), and NAS
 * (a claim bound to an `nfs` volume or to the NAS CSI driver's). A claim is followed to its
 * PersistentVolume as a kubelet does (the Node authorizer lets a node read both). Other kinds
 * stay refused by `./volumes.ts`.
 * @module
 */
import type { PersistentVolumeSpec, Volume } from "kubernetes-types/core/v1.d.ts";
import {
  InvalidInputError,
  isKubeNotFound,
  type ProviderKubeClient,
  TransientError,
} from "../../../provider/mod.ts";

/** An NFS or NAS share as ECI's `NFSVolume`. */
export interface NfsShare {
  server: string;
  path: string;
  readOnly?: boolean;
}

/** An Alibaba Cloud disk as ECI's `DiskVolume`. */
export interface CloudDisk {
  diskId: string;
  fsType?: string;
}

/** A volume ECI mounts from the network. */
export type NetworkVolume = { nfs: NfsShare } | { disk: CloudDisk };

const DISK_CSI = "diskplugin.csi.alibabacloud.com";
const NAS_CSI = "nasplugin.csi.alibabacloud.com";

function fromSource(
  spec: Pick<PersistentVolumeSpec, "nfs" | "csi" | "flexVolume">,
  field: string,
  readOnly?: boolean,
): NetworkVolume | undefined {
  if (spec.nfs) {
    const ro = readOnly ?? spec.nfs.readOnly;
    return {
      nfs: { server: spec.nfs.server, path: spec.nfs.path, ...(ro ? { readOnly: true } : {}) },
    };
  }
  if (spec.flexVolume?.driver === "alicloud/disk") {
    const diskId = spec.flexVolume.options?.volumeId;
    if (!diskId) {
      throw new InvalidInputError(`${field}.flexVolume.options.volumeId: name the disk (d-...)`);
    }
    return {
      disk: { diskId, ...(spec.flexVolume.fsType ? { fsType: spec.flexVolume.fsType } : {}) },
    };
  }
  if (spec.csi?.driver === DISK_CSI) {
    return {
      disk: {
        diskId: spec.csi.volumeHandle,
        ...(spec.csi.fsType ? { fsType: spec.csi.fsType } : {}),
      },
    };
  }
  if (spec.csi?.driver === NAS_CSI) {
    const { server, path = "/" } = spec.csi.volumeAttributes ?? {};
    if (!server) throw new InvalidInputError(`${field}: the NAS volume names no server attribute`);
    const ro = readOnly ?? spec.csi.readOnly;
    return { nfs: { server, path, ...(ro ? { readOnly: true } : {}) } };
  }
  return undefined;
}

/** Kube reads a claim needs. */
export type ClaimReader = Pick<ProviderKubeClient, "persistentVolumeClaims" | "persistentVolumes">;

/** The pod's volume as an ECI network volume, or `undefined` when it is none of these kinds. */
export async function networkVolume(
  namespace: string,
  v: Volume,
  field: string,
  source: { kube?: ClaimReader; signal?: AbortSignal },
): Promise<NetworkVolume | undefined> {
  if (v.nfs || v.flexVolume) return fromSource({ nfs: v.nfs, flexVolume: v.flexVolume }, field);
  const claimRef = v.persistentVolumeClaim;
  if (!claimRef) return undefined;
  const kube = source.kube;
  if (!kube?.persistentVolumeClaims || !kube.persistentVolumes) {
    throw new TransientError(`${field}.persistentVolumeClaim: the provider cannot read claims`);
  }
  let volumeName: string | undefined;
  try {
    const claim = await kube.persistentVolumeClaims.get(namespace, claimRef.claimName, source);
    volumeName = claim.spec?.volumeName;
  } catch (err) {
    if (isKubeNotFound(err)) {
      throw new TransientError(
        `${field}: PersistentVolumeClaim ${namespace}/${claimRef.claimName} not found; create it`,
      );
    }
    throw err;
  }
  if (!volumeName) {
    throw new TransientError(
      `${field}: PersistentVolumeClaim ${namespace}/${claimRef.claimName} is not bound yet`,
    );
  }
  const volume = await kube.persistentVolumes.get(volumeName, source);
  const found = fromSource(volume.spec ?? {}, field, claimRef.readOnly || undefined);
  if (!found) {
    throw new InvalidInputError(
      `${field}.persistentVolumeClaim: PersistentVolume ${volumeName} is not one ECI can mount (nfs, ${DISK_CSI}, ${NAS_CSI} or the alicloud/disk flexVolume)`,
    );
  }
  return found;
}
