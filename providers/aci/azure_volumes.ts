/**
 * The network volumes ACI mounts itself (api-version 2023-05-01 `Volume`): Azure Files shares,
 * from an `azureFile` volume or an inline volume of the Azure Files CSI driver
 * (`file.csi.azure.com`, attributes `shareName` and `secretName`), with the storage account's
 * name and key from the Secret the pod names (`azurestorageaccountname`,
 * `azurestorageaccountkey`, as both the in-tree plugin and the CSI driver read them); and
 * `gitRepo`. The key goes to ACI in the request and ACI never returns it.
 * @module
 */
import type { Volume as KubeVolume } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError, isKubeNotFound, type ProviderKubeClient } from "../../provider/mod.ts";

/** The Azure Files CSI driver's name. */
export const AZURE_FILE_DRIVER = "file.csi.azure.com";

/** The CSI driver's attributes ACI can honour. */
const CSI_ATTRIBUTES = ["shareName", "secretName", "secretNamespace"];

/** ACI's `AzureFileVolume`. */
export interface AciAzureFile {
  shareName: string;
  storageAccountName: string;
  storageAccountKey: string;
  readOnly?: boolean;
}

/** ACI's `GitRepoVolume`. */
export interface AciGitRepo {
  repository: string;
  directory?: string;
  revision?: string;
}

const decode = (b64: string) =>
  new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));

async function storageAccount(
  volume: string,
  namespace: string,
  secretName: string,
  sources: { kube?: ProviderKubeClient; signal?: AbortSignal },
) {
  if (!sources.kube) {
    throw new InvalidInputError(`spec.volumes[${volume}]: vkubelet has no API client to read it`);
  }
  let secret;
  try {
    secret = await sources.kube.secrets.get(namespace, secretName, sources);
  } catch (err) {
    if (isKubeNotFound(err)) {
      throw new InvalidInputError(
        `spec.volumes[${volume}]: Secret ${namespace}/${secretName} does not exist; create it with azurestorageaccountname and azurestorageaccountkey`,
      );
    }
    throw err;
  }
  const name = secret.data?.azurestorageaccountname;
  const key = secret.data?.azurestorageaccountkey;
  if (!name || !key) {
    throw new InvalidInputError(
      `spec.volumes[${volume}]: Secret ${namespace}/${secretName} needs the keys azurestorageaccountname and azurestorageaccountkey`,
    );
  }
  return { storageAccountName: decode(name), storageAccountKey: decode(key) };
}

/** An `azureFile` volume or an Azure Files CSI inline volume as ACI's `azureFile`. */
export async function azureFileOf(
  v: KubeVolume,
  namespace: string,
  sources: { kube?: ProviderKubeClient; signal?: AbortSignal },
): Promise<AciAzureFile> {
  let share: string | undefined;
  let secretName: string | undefined;
  let readOnly: boolean | undefined;
  if (v.azureFile) {
    ({ shareName: share, secretName, readOnly } = v.azureFile);
  } else if (v.csi) {
    if (v.csi.driver !== AZURE_FILE_DRIVER) {
      throw new InvalidInputError(
        `spec.volumes[${v.name}].csi.driver: ACI mounts Azure Files only (${AZURE_FILE_DRIVER}), not ${v.csi.driver}`,
      );
    }
    const attributes = v.csi.volumeAttributes ?? {};
    const unknown = Object.keys(attributes).find((k) => !CSI_ATTRIBUTES.includes(k));
    if (unknown !== undefined) {
      throw new InvalidInputError(
        `spec.volumes[${v.name}].csi.volumeAttributes.${unknown}: ACI's azureFile volume takes a share, the account's name and key, and readOnly only (api-version 2023-05-01); use ${
          CSI_ATTRIBUTES.join(", ")
        }`,
      );
    }
    if (attributes.secretNamespace && attributes.secretNamespace !== namespace) {
      throw new InvalidInputError(
        `spec.volumes[${v.name}].csi.volumeAttributes.secretNamespace: vkubelet reads the Secret in the pod's namespace ${namespace} only (the Node authorizer's rule)`,
      );
    }
    share = attributes.shareName;
    secretName = attributes.secretName ?? v.csi.nodePublishSecretRef?.name;
    readOnly = v.csi.readOnly;
  }
  if (!share) {
    throw new InvalidInputError(`spec.volumes[${v.name}]: name the Azure Files share (shareName)`);
  }
  if (!secretName) {
    throw new InvalidInputError(
      `spec.volumes[${v.name}]: name the Secret with the storage account's name and key (secretName)`,
    );
  }
  return {
    shareName: share,
    ...await storageAccount(v.name, namespace, secretName, sources),
    ...(readOnly !== undefined ? { readOnly } : {}),
  };
}

/** A `gitRepo` volume as ACI's `gitRepo` (ACI clones it; the fields are the same). */
export function gitRepoOf(v: KubeVolume): AciGitRepo {
  const git = v.gitRepo!;
  if (git.directory?.split("/").includes("..")) {
    throw new InvalidInputError(
      `spec.volumes[${v.name}].gitRepo.directory: must not contain '..'`,
    );
  }
  return {
    repository: git.repository,
    ...(git.directory ? { directory: git.directory } : {}),
    ...(git.revision ? { revision: git.revision } : {}),
  };
}
