/**
 * Binds cluster A's claims that A's scheduler meant for this virtual node (`upstreamProvisioner`).
 *
 * A StorageClass of A names the provisioner (`provisioner: downstream.vkubelet.io`,
 * `volumeBindingMode: WaitForFirstConsumer`). A's scheduler then picks a node for the pod first,
 * writes it on the claim (`volume.kubernetes.io/selected-node`), and A's PV controller marks the
 * claim for an external provisioner (`volume.kubernetes.io/storage-provisioner`); the scheduler
 * binds the pod once the claim is bound (kubernetes/kubernetes
 * pkg/scheduler/framework/plugins/volumebinding/binder.go, and
 * pkg/controller/volume/persistentvolume/pv_controller.go `provisionClaimOperation`). For a claim
 * selected for this node, this creates the PersistentVolume in A, pre-bound to the claim (A's PV
 * controller completes the binding), as sig-storage's external provisioners do.
 *
 * That volume holds nothing in A: its source names a CSI driver of the provisioner's name that
 * no node of A runs, with the claim's copy in B as the handle, so only vkubelet can use it; its
 * node affinity keeps every later pod of the claim on this virtual node, where the copy in B
 * (and the data) is. It is deleted with its claim (reclaim policy Delete; the copy in B goes too).
 * @module
 */
import type { PersistentVolume, PersistentVolumeClaim } from "kubernetes-types/core/v1.d.ts";
import { isAlreadyExists, isConflict, isKubeNotFound } from "../../../k8s/mod.ts";
import type { Clock, Logger, ProviderPersistentVolumesApi } from "../../../provider/mod.ts";
import { markLabels, MARKS } from "../names.ts";
import type { Placement } from "../placement.ts";

/** The annotation A's scheduler writes on a WaitForFirstConsumer claim: the node it chose. */
export const SELECTED_NODE = "volume.kubernetes.io/selected-node";
const STORAGE_PROVISIONER = [
  "volume.kubernetes.io/storage-provisioner",
  "volume.beta.kubernetes.io/storage-provisioner",
];

/** What the provisioner needs. */
export interface UpstreamProvisionerDeps {
  /** A's PersistentVolumes (create and delete: rights beyond a kubelet's). */
  volumes: ProviderPersistentVolumesApi;
  /** The provisioner name the StorageClasses of A give. */
  provisioner: string;
  nodeName: string;
  /** The virtual node's `kubernetes.io/hostname` label (A's volume node affinity matches it). */
  hostname: () => string;
  placement: Pick<Placement, "namespaceOf" | "nameOf">;
  clock: Clock;
  log: Logger;
  signal: AbortSignal;
}

/** Provisions A's claims selected for this node; see the module doc. */
export class UpstreamProvisioner {
  readonly #deps: UpstreamProvisionerDeps;
  /** Claims (by uid) with a create in flight or done. */
  readonly #started = new Set<string>();

  constructor(deps: UpstreamProvisionerDeps) {
    this.#deps = deps;
  }

  /** A claim of A was added or changed: provision it if it is ours to provision. */
  observe(claim: PersistentVolumeClaim): void {
    const uid = claim.metadata?.uid;
    if (!uid || !this.#isOurs(claim) || this.#started.has(uid)) return;
    this.#started.add(uid);
    this.#provision(claim).catch((err) => {
      this.#deps.log.warn("could not provision claim {claim} in A, retrying in 5 s: {err}", {
        claim: `${claim.metadata?.namespace}/${claim.metadata?.name}`,
        err: String(err),
      });
      // Claims change rarely: retry on our own rather than wait for the next update.
      void this.#deps.clock.sleep(5000, this.#deps.signal).then(() => {
        this.#started.delete(uid);
        this.observe(claim);
      }, () => {});
    });
  }

  /** A claim of A is gone: its volume of ours goes too (the data in B goes with the copy). */
  async release(claim: PersistentVolumeClaim): Promise<void> {
    const uid = claim.metadata?.uid;
    if (uid) this.#started.delete(uid);
    const name = claim.spec?.volumeName;
    if (!name) return;
    const { volumes, nodeName, signal } = this.#deps;
    let volume: PersistentVolume;
    try {
      volume = await volumes.get(name, { signal });
    } catch (err) {
      if (isKubeNotFound(err)) return;
      throw err;
    }
    const ours = markLabels(nodeName, "")[MARKS.node];
    if (volume.metadata?.labels?.[MARKS.node] !== ours) return;
    if (volume.spec?.claimRef?.uid !== uid) return;
    await volumes.delete(name, { preconditions: { uid: volume.metadata?.uid }, signal })
      .catch((err) => {
        if (!isKubeNotFound(err) && !isConflict(err)) throw err;
      });
  }

  #isOurs(claim: PersistentVolumeClaim): boolean {
    const annotations = claim.metadata?.annotations ?? {};
    return annotations[SELECTED_NODE] === this.#deps.nodeName &&
      STORAGE_PROVISIONER.some((a) => annotations[a] === this.#deps.provisioner) &&
      !claim.spec?.volumeName && !claim.metadata?.deletionTimestamp;
  }

  async #provision(claim: PersistentVolumeClaim): Promise<void> {
    const { namespace, name } = claim.metadata ?? {};
    const storage = claim.spec?.resources?.requests?.storage;
    if (!storage) {
      this.#deps.log.warn("claim {claim} requests no storage; not provisioning it", {
        claim: `${namespace}/${name}`,
      });
      return;
    }
    const volume = this.#volumeFor(claim, storage);
    try {
      await this.#deps.volumes.create(volume, { signal: this.#deps.signal });
      this.#deps.log.info("provisioned {volume} in A for claim {claim}", {
        volume: volume.metadata!.name,
        claim: `${namespace}/${name}`,
      });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
  }

  /** The volume in A bound to `claim`: its copy in B, on the virtual node. */
  #volumeFor(claim: PersistentVolumeClaim, storage: string): PersistentVolume {
    const { namespace, name, uid } = claim.metadata as Required<
      Pick<NonNullable<PersistentVolumeClaim["metadata"]>, "namespace" | "name" | "uid">
    >;
    const { provisioner, nodeName, placement } = this.#deps;
    return {
      apiVersion: "v1",
      kind: "PersistentVolume",
      metadata: {
        name: `pvc-${uid}`,
        labels: { [MARKS.node]: markLabels(nodeName, "")[MARKS.node] },
        annotations: { "pv.kubernetes.io/provisioned-by": provisioner },
      },
      spec: {
        capacity: { storage },
        accessModes: claim.spec?.accessModes,
        volumeMode: claim.spec?.volumeMode,
        storageClassName: claim.spec?.storageClassName,
        persistentVolumeReclaimPolicy: "Delete",
        claimRef: { apiVersion: "v1", kind: "PersistentVolumeClaim", namespace, name, uid },
        nodeAffinity: {
          required: {
            nodeSelectorTerms: [{
              matchExpressions: [{
                key: "kubernetes.io/hostname",
                operator: "In",
                values: [this.#deps.hostname()],
              }],
            }],
          },
        },
        csi: {
          driver: provisioner,
          volumeHandle: `${placement.namespaceOf(namespace)}/${placement.nameOf(namespace, name)}`,
          volumeAttributes: { [MARKS.node]: nodeName },
        },
      },
    };
  }
}
