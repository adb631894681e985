/**
 * Secret-sourced env values of a pod, kept in AWS Secrets Manager instead of the task definition:
 * one secret per pod (`vkubelet/<namespace>/<pod>/<uid>`), its value a JSON object with one key
 * per variable (`<container>/<NAME>`), which ECS reads at task start through the container
 * definition's `secrets` (`valueFrom: <secret ARN>:<key>::`). The secret is written before the
 * task definition is registered, rewritten when the pod's values change (a restarted task reads
 * the new ones, as a restarted container does on a kubelet), and deleted without a recovery
 * window when the pod goes, so no value outlives its pod.
 * @module
 */
import {
  CreateSecretCommand,
  DeleteSecretCommand,
  PutSecretValueCommand,
  type SecretsManagerClient,
} from "@aws-sdk/client-secrets-manager";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { awsError, awsErrorName } from "./aws.ts";
import { TAGS } from "../names.ts";

/** A pod's Secret-sourced values, by `<container>/<NAME>`. */
export type SecretValues = Record<string, string>;

/** The key of a container's variable in the pod's secret. */
export const secretKey = (container: string, name: string) => `${container}/${name}`;

/** The values the core marked as coming from a Secret (`secretEnvRefs`), by {@link secretKey}. */
export function secretValuesOf(pod: Pod): SecretValues {
  const values: SecretValues = {};
  for (const c of [...pod.spec?.initContainers ?? [], ...pod.spec?.containers ?? []]) {
    for (const e of c.env ?? []) {
      if (e.valueFrom?.secretKeyRef && e.value !== undefined) {
        values[secretKey(c.name, e.name)] = e.value;
      }
    }
  }
  return values;
}

/** The Secrets Manager name of a pod's secret. */
export function podSecretName(pod: { namespace: string; name: string; uid: string }): string {
  return `vkubelet/${pod.namespace}/${pod.name}/${pod.uid}`;
}

/** Secrets Manager calls for pods' secrets. */
export class PodSecrets {
  readonly #client: SecretsManagerClient;

  constructor(client: SecretsManagerClient) {
    this.#client = client;
  }

  /**
   * `secretsmanager:CreateSecret` of the pod's secret, or `PutSecretValue` when it exists; its
   * ARN.
   */
  async put(
    pod: { namespace: string; name: string; uid: string },
    values: SecretValues,
    options: { tags: Record<string, string>; signal?: AbortSignal },
  ): Promise<string> {
    const name = podSecretName(pod);
    const text = JSON.stringify(values);
    const send = { abortSignal: options.signal };
    try {
      const tags = Object.entries({
        ...options.tags,
        [TAGS.namespace]: pod.namespace,
        [TAGS.pod]: pod.name,
        [TAGS.uid]: pod.uid,
      }).map(([Key, Value]) => ({ Key, Value }));
      const out = await this.#client.send(
        new CreateSecretCommand({ Name: name, SecretString: text, Tags: tags }),
        send,
      );
      if (out.ARN) return out.ARN;
    } catch (err) {
      if (awsErrorName(err) !== "ResourceExistsException") {
        throw awsError(`creating secret ${name}`, err);
      }
    }
    const out = await this.#client.send(
      new PutSecretValueCommand({ SecretId: name, SecretString: text }),
      send,
    ).catch((err) => {
      throw awsError(`writing secret ${name}`, err);
    });
    if (!out.ARN) throw awsError(`writing secret ${name}`, new Error("no ARN in the answer"));
    return out.ARN;
  }

  /** `secretsmanager:DeleteSecret` at once (no recovery window); a missing one is done. */
  async remove(
    pod: { namespace: string; name: string; uid: string },
    signal?: AbortSignal,
  ): Promise<void> {
    const name = podSecretName(pod);
    try {
      await this.#client.send(
        new DeleteSecretCommand({ SecretId: name, ForceDeleteWithoutRecovery: true }),
        { abortSignal: signal },
      );
    } catch (err) {
      if (awsErrorName(err) === "ResourceNotFoundException") return;
      throw awsError(`deleting secret ${name}`, err);
    }
  }
}
