/**
 * The container group's managed identity, from the pod's ServiceAccount: the annotation
 * {@link IDENTITY_ANNOTATION} names a user-assigned managed identity by its ARM resource ID, which
 * must be allowed for the pod's namespace in the provider config's `allowedIdentities` (the
 * namespace's own list, or the `"*"` list every namespace shares). The group then carries it as
 * `identity: { type: "UserAssigned", userAssignedIdentities: { <id>: {} } }` (ContainerGroupIdentity
 * of Microsoft.ContainerInstance 2023-05-01). The allowlist is per namespace because a
 * ServiceAccount is edited by whoever may edit its namespace: a global list would let namespace b
 * take namespace a's identity (as fargate's `allowedTaskRoles`, providers/fargate/task_role.ts).
 * With no allowlist no ServiceAccount is read and no group gets an identity.
 *
 * Not AKS workload identity's `azure.workload.identity/client-id`: that names a client ID for a
 * federated token the pod would have to mount, which an ACI group cannot; the group's own
 * identity is reached from inside it through ACI's managed-identity endpoint instead.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  checkNamespaceAllows,
  InvalidInputError,
  podServiceAccount,
  type ProviderKubeClient,
} from "../../../provider/mod.ts";

/** The ServiceAccount annotation that names a pod's user-assigned managed identity. */
export const IDENTITY_ANNOTATION = "aci.vkubelet.io/managed-identity";

/** AKS workload identity's annotation, noted when found instead of ours. */
const WORKLOAD_IDENTITY_ANNOTATION = "azure.workload.identity/client-id";

/** A user-assigned identity's ARM resource ID (`*` allowed in patterns only, after the type). */
export const IDENTITY_ID =
  /^\/subscriptions\/[^/*]+\/resourceGroups\/[^/*]+\/providers\/Microsoft\.ManagedIdentity\/userAssignedIdentities\/[^/]+$/i;

/** The group's `identity` (ContainerGroupIdentity), as sent. */
export interface GroupIdentity {
  type: "UserAssigned";
  userAssignedIdentities: Record<string, Record<string, never>>;
}

/** What {@link identityFor} needs. */
export interface IdentityOptions {
  /** Namespace → identity resource IDs (or patterns with `*`) its ServiceAccounts may name. */
  allowed: Readonly<Record<string, readonly string[]>>;
  kube?: Pick<ProviderKubeClient, "serviceAccounts">;
  signal?: AbortSignal;
}

/** The pod's group identity, or undefined (none named, or no allowlist); see the module doc. */
export async function identityFor(
  pod: Pod,
  options: IdentityOptions,
): Promise<{ identity?: GroupIdentity; notes: string[] }> {
  if (Object.keys(options.allowed).length === 0) return { notes: [] };
  const sa = await podServiceAccount(pod, options.kube, "its managed identity", options.signal);
  const { account, what } = sa;
  const annotations = account.metadata?.annotations ?? {};
  const id = annotations[IDENTITY_ANNOTATION];
  if (id === undefined) {
    const notes = annotations[WORKLOAD_IDENTITY_ANNOTATION] === undefined ? [] : [
      `${what} has ${WORKLOAD_IDENTITY_ANNOTATION}, which ACI container groups do not use; name the identity's resource ID with ${IDENTITY_ANNOTATION}`,
    ];
    return { notes };
  }
  if (!IDENTITY_ID.test(id) || id.includes("*")) {
    throw new InvalidInputError(
      `${what}: annotation ${IDENTITY_ANNOTATION} is ${JSON.stringify(id)}, not the resource ID ` +
        `of one user-assigned managed identity (/subscriptions/<id>/resourceGroups/<group>/` +
        `providers/Microsoft.ManagedIdentity/userAssignedIdentities/<name>, no wildcards)`,
    );
  }
  checkNamespaceAllows(sa, {
    annotation: IDENTITY_ANNOTATION,
    value: id,
    key: "allowedIdentities",
    allowed: options.allowed,
  }, { ignoreCase: true }); // ARM resource IDs compare without case
  return { identity: { type: "UserAssigned", userAssignedIdentities: { [id]: {} } }, notes: [] };
}
