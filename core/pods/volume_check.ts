/**
 * Whether a pod's volumes could be set up now: the sources the kubelet's volume manager reads
 * before it starts any container. A non-optional Secret or ConfigMap volume (or projected source)
 * whose object or listed key is missing fails `MountVolume.SetUp`, and a PersistentVolumeClaim
 * that is missing, being deleted or not bound fails the desired-state populator. The messages are
 * the kubelet's: kubernetes/kubernetes pkg/volume/secret/secret.go, pkg/volume/configmap/
 * configmap.go, pkg/volume/projected/projected.go (`SetUpAt`, `MakePayload`), and
 * pkg/kubelet/volumemanager/populator/desired_state_of_world_populator.go (`getPVCExtractPV`)
 * with pkg/kubelet/volumemanager/volume_manager.go (`WaitForAttachAndMount`).
 * @module
 */
import type {
  ConfigMap,
  KeyToPath,
  PersistentVolumeClaim,
  Pod,
  Secret,
  Volume,
} from "kubernetes-types/core/v1.d.ts";
import type { CallOptions } from "../../provider/mod.ts";

/** Where the check reads objects; each answers `undefined` for an object that does not exist. */
export interface VolumeSources {
  configMap(namespace: string, name: string, options: CallOptions): Promise<ConfigMap | undefined>;
  secret(namespace: string, name: string, options: CallOptions): Promise<Secret | undefined>;
  persistentVolumeClaim(
    namespace: string,
    name: string,
    options: CallOptions,
  ): Promise<PersistentVolumeClaim | undefined>;
}

/** One `FailedMount` event the kubelet would record for the pod. */
export interface MountFailure {
  /** The volumes it is about. */
  volumes: string[];
  message: string;
}

/** The mount failures of `pod` now; empty when every volume could be set up. */
export async function checkVolumes(
  pod: Pod,
  sources: VolumeSources,
  options: CallOptions = {},
): Promise<MountFailure[]> {
  const namespace = pod.metadata?.namespace ?? "";
  const failures: MountFailure[] = [];
  const claimErrors: string[] = [];
  const claimVolumes: string[] = [];
  for (const volume of pod.spec?.volumes ?? []) {
    if (volume.persistentVolumeClaim) {
      const claim = volume.persistentVolumeClaim.claimName;
      const problem = claimProblem(await sources.persistentVolumeClaim(namespace, claim, options));
      if (problem === undefined) continue;
      const detail = problem === "missing"
        ? `failed to fetch PVC from API server: persistentvolumeclaims "${claim}" not found`
        : problem;
      claimErrors.push(`error processing PVC ${namespace}/${claim}: ${detail}`);
      claimVolumes.push(volume.name);
      continue;
    }
    const errors = await setUpErrors(volume, namespace, sources, options);
    if (errors.length === 0) continue;
    // utilerrors.NewAggregate: one error as it is, several as "[a, b]".
    const err = errors.length === 1 ? errors[0] : `[${errors.join(", ")}]`;
    failures.push({
      volumes: [volume.name],
      message: `MountVolume.SetUp failed for volume "${volume.name}" : ${err}`,
    });
  }
  if (claimVolumes.length > 0) {
    const unmounted = [...claimVolumes, ...failures.flatMap((f) => f.volumes)].sort();
    failures.push({
      volumes: claimVolumes,
      message: `Unable to attach or mount volumes: unmounted volumes=[${unmounted.join(" ")}], ` +
        `unattached volumes=[], failed to process volumes=[${claimVolumes.sort().join(" ")}]: ` +
        claimErrors.join("; "),
    });
  }
  return failures;
}

function claimProblem(claim: PersistentVolumeClaim | undefined): string | undefined {
  if (!claim) return "missing";
  const protectedClaim = claim.metadata?.finalizers?.includes("kubernetes.io/pvc-protection");
  if (claim.metadata?.deletionTimestamp && !protectedClaim) return "PVC is being deleted";
  if (claim.status?.phase !== "Bound") return "PVC is not bound";
  if (!claim.spec?.volumeName) return "PVC has empty pvc.Spec.VolumeName";
  return undefined;
}

/** The errors `SetUpAt` of a Secret, ConfigMap or projected volume would return. */
async function setUpErrors(
  volume: Volume,
  namespace: string,
  sources: VolumeSources,
  options: CallOptions,
): Promise<string[]> {
  const secretSources = [
    ...volume.secret ? [{ ...volume.secret, name: volume.secret.secretName ?? "" }] : [],
    ...(volume.projected?.sources ?? []).flatMap((s) => s.secret ? [s.secret] : []),
  ];
  const configMapSources = [
    ...volume.configMap ? [volume.configMap] : [],
    ...(volume.projected?.sources ?? []).flatMap((s) => s.configMap ? [s.configMap] : []),
  ];
  const errors: string[] = [];
  for (const source of secretSources) {
    const name = source.name ?? "";
    const secret = await sources.secret(namespace, name, options);
    const keys = new Set([
      ...Object.keys(secret?.data ?? {}),
      ...Object.keys(secret?.stringData ?? {}),
    ]);
    const error = sourceError(secret !== undefined, source, keys, {
      missing: `secret "${name}" not found`,
      missingKey: "references non-existent secret key: ",
    });
    if (error) errors.push(error);
  }
  for (const source of configMapSources) {
    const name = source.name ?? "";
    const configMap = await sources.configMap(namespace, name, options);
    const keys = new Set([
      ...Object.keys(configMap?.data ?? {}),
      ...Object.keys(configMap?.binaryData ?? {}),
    ]);
    const error = sourceError(configMap !== undefined, source, keys, {
      missing: `configmap "${name}" not found`,
      missingKey: "configmap references non-existent config key: ",
    });
    if (error) errors.push(error);
  }
  return errors;
}

function sourceError(
  found: boolean,
  source: { optional?: boolean; items?: KeyToPath[] },
  keys: Set<string>,
  messages: { missing: string; missingKey: string },
): string | undefined {
  if (source.optional) return undefined;
  if (!found) return messages.missing;
  const absent = (source.items ?? []).find((item) => !keys.has(item.key));
  return absent ? messages.missingKey + absent.key : undefined;
}
