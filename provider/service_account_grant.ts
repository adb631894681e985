/**
 * A cloud credential a pod takes from its ServiceAccount's annotation (fargate's task role, aci's
 * managed identity), allowed per namespace by the provider config: the namespace's own list of
 * patterns or the `"*"` list every namespace shares. Per namespace because a ServiceAccount is
 * edited by whoever may edit its namespace: one global list would let namespace b name namespace
 * a's credential.
 * @module
 */
import type { Pod, ServiceAccount } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError, TransientError } from "./errors.ts";
import { isKubeNotFound, type ProviderKubeClient } from "./kube_client.ts";

/** Namespace (or `"*"`) → the values (`*` a wildcard) its ServiceAccounts may name. */
export type NamespaceAllowlist = Readonly<Record<string, readonly string[]>>;

/** The pod's ServiceAccount and how messages name it. */
export interface PodServiceAccount {
  /** The ServiceAccount as read. */
  account: ServiceAccount;
  /** The pod's (and the account's) namespace. */
  namespace: string;
  /** `serviceaccount <namespace>/<name>`. */
  what: string;
}

/**
 * Reads the pod's ServiceAccount (`default` when it names none); a failed read is transient (the
 * pod waits, as for a missing Secret), and says what it was read for (`purpose`).
 */
export async function podServiceAccount(
  pod: Pod,
  kube: Pick<ProviderKubeClient, "serviceAccounts"> | undefined,
  purpose: string,
  signal?: AbortSignal,
): Promise<PodServiceAccount> {
  const namespace = pod.metadata?.namespace ?? "";
  const name = pod.spec?.serviceAccountName || "default";
  const what = `serviceaccount ${namespace}/${name}`;
  const get = kube?.serviceAccounts.get?.bind(kube.serviceAccounts);
  if (!get) {
    throw new TransientError(
      `cannot read ${what} for ${purpose}: vkubelet's Kubernetes client has no ServiceAccount reads`,
    );
  }
  const account = await get(namespace, name, { signal }).catch((err) => {
    const why = isKubeNotFound(err)
      ? "it does not exist"
      : `${err instanceof Error ? err.message : err}; vkubelet needs get on serviceaccounts`;
    throw new TransientError(`cannot read ${what} for ${purpose}: ${why}`, { cause: err });
  });
  return { account, namespace, what };
}

/**
 * Refuses `value` (named by `annotation` on `sa`) unless a pattern of its namespace's list or of
 * the `"*"` list in `allowed` (the config key `key`) matches it; `*` in a pattern stands for any
 * run of characters. `ignoreCase` for values the vendor compares without case (ARM IDs).
 */
export function checkNamespaceAllows(
  sa: PodServiceAccount,
  grant: { annotation: string; value: string; key: string; allowed: NamespaceAllowlist },
  options: { ignoreCase?: boolean } = {},
): void {
  const { namespace, what } = sa;
  const { annotation, value, key, allowed } = grant;
  // Own-property reads only: a namespace called "constructor" must not find Object's.
  const lists = [namespace, "*"].map((ns) => Object.hasOwn(allowed, ns) ? allowed[ns] : []);
  if (lists.flat().some((pattern) => matches(pattern, value, options.ignoreCase ?? false))) return;
  throw new InvalidInputError(
    `${what}: annotation ${annotation} names ${value}, which the provider config's ` +
      `${key} does not allow in namespace ${namespace} (neither ` +
      `${key}.${namespace} nor ${key}["*"] matches it); add it to ` +
      `${key}.${namespace} if that namespace may use it, or change the annotation`,
  );
}

function matches(pattern: string, value: string, ignoreCase: boolean): boolean {
  const parts = pattern.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\/]/g, "\\$&"));
  return new RegExp(`^${parts.join(".*")}$`, ignoreCase ? "i" : "").test(value);
}
