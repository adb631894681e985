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
  checkNamespaceAllows,
  InvalidInputError,
  podServiceAccount,
  type ProviderKubeClient,
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
  const sa = await podServiceAccount(pod, options.kube, "its task role", options.signal);
  const { account, what } = sa;
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
  checkNamespaceAllows(sa, {
    annotation: TASK_ROLE_ANNOTATION,
    value: arn,
    key: "allowedTaskRoles",
    allowed: config.allowedTaskRoles,
  });
  return { arn, notes: [] };
}
