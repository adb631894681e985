/**
 * The ECS task role of a pod, from its ServiceAccount: the annotation
 * {@link TASK_ROLE_ANNOTATION} names an IAM role, which must be allowed for the pod's namespace
 * in the provider config's `allowedTaskRoles` (the namespace's own list, or the `"*"` list every
 * namespace shares); a pod whose ServiceAccount names none gets the config's `taskRoleArn` (or no
 * role). The allowlist is per namespace because a ServiceAccount is edited by whoever may edit
 * its namespace: one global list let a team that owns namespace b take namespace a's role. With
 * no allowlist no ServiceAccount is read at all.
 *
 * Not EKS's `eks.amazonaws.com/role-arn`: in an EKS cluster that annotation makes the pod
 * identity webhook add a projected token volume to the pod (which Fargate cannot mount), and the
 * role it names trusts the cluster's OIDC provider, not `ecs-tasks.amazonaws.com`, so ECS could
 * not assume it anyway.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  InvalidInputError,
  isKubeNotFound,
  type ProviderKubeClient,
  TransientError,
} from "../../provider/mod.ts";
import type { FargateConfig } from "./config.ts";

/** The ServiceAccount annotation that names a pod's task role. */
export const TASK_ROLE_ANNOTATION = "fargate.vkubelet.io/task-role-arn";

/** EKS's IRSA annotation, noted when found instead of ours. */
const EKS_ROLE_ANNOTATION = "eks.amazonaws.com/role-arn";

/** The pod's task role, and what the user should hear about it. */
export interface TaskRole {
  arn?: string;
  notes: string[];
}

/** Where {@link taskRoleFor} reads ServiceAccounts. */
export interface TaskRoleOptions {
  kube?: Pick<ProviderKubeClient, "serviceAccounts">;
  signal?: AbortSignal;
}

/** The task role for `pod` under `config`; see the module doc. */
export async function taskRoleFor(
  pod: Pod,
  config: FargateConfig,
  options: TaskRoleOptions,
): Promise<TaskRole> {
  if (Object.keys(config.allowedTaskRoles).length === 0) {
    return { arn: config.taskRoleArn, notes: [] };
  }
  const namespace = pod.metadata?.namespace ?? "";
  const name = pod.spec?.serviceAccountName || "default";
  const what = `serviceaccount ${namespace}/${name}`;
  const get = options.kube?.serviceAccounts.get?.bind(options.kube.serviceAccounts);
  if (!get) {
    throw new TransientError(
      `cannot read ${what} for its task role: vkubelet's Kubernetes client has no ServiceAccount reads`,
    );
  }
  const account = await get(namespace, name, { signal: options.signal }).catch((err) => {
    const why = isKubeNotFound(err)
      ? "it does not exist"
      : `${err instanceof Error ? err.message : err}; vkubelet needs get on serviceaccounts`;
    throw new TransientError(`cannot read ${what} for its task role: ${why}`, { cause: err });
  });
  const annotations = account.metadata?.annotations ?? {};
  const arn = annotations[TASK_ROLE_ANNOTATION];
  if (arn === undefined) {
    const notes = annotations[EKS_ROLE_ANNOTATION] === undefined ? [] : [
      `${what} has ${EKS_ROLE_ANNOTATION}, which Fargate tasks do not use; name the task role with ${TASK_ROLE_ANNOTATION}`,
    ];
    return { arn: config.taskRoleArn, notes };
  }
  if (!/^arn:aws[a-z-]*:iam::\d{12}:role\/[^*]+$/.test(arn)) {
    throw new InvalidInputError(
      `${what}: annotation ${TASK_ROLE_ANNOTATION} is ${JSON.stringify(arn)}, not the ARN of one ` +
        `IAM role (arn:aws:iam::<account>:role/<name>, no wildcards)`,
    );
  }
  if (!roleAllowed(config.allowedTaskRoles, namespace, arn)) {
    throw new InvalidInputError(
      `${what}: annotation ${TASK_ROLE_ANNOTATION} names ${arn}, which the provider config's ` +
        `allowedTaskRoles does not allow in namespace ${namespace} (neither ` +
        `allowedTaskRoles.${namespace} nor allowedTaskRoles["*"] matches it); add it to ` +
        `allowedTaskRoles.${namespace} if that namespace may use it, or change the annotation`,
    );
  }
  return { arn, notes: [] };
}

/** Whether `arn` matches a pattern of `namespace`'s list or of the `"*"` list. */
function roleAllowed(
  allowed: Readonly<Record<string, readonly string[]>>,
  namespace: string,
  arn: string,
): boolean {
  // Own-property reads only: a namespace called "constructor" must not find Object's.
  const lists = [namespace, "*"].map((key) => Object.hasOwn(allowed, key) ? allowed[key] : []);
  return lists.flat().some((pattern) => matchesRolePattern(pattern, arn));
}

/** `pattern` with `*` standing for any run of characters (as IAM's own ARN wildcards). */
function matchesRolePattern(pattern: string, arn: string): boolean {
  if (!pattern.includes("*")) return pattern === arn;
  const parts = pattern.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\/]/g, "\\$&"));
  return new RegExp(`^${parts.join(".*")}$`).test(arn);
}
