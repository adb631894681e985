/**
 * A pod's ECS task role comes from its ServiceAccount's annotation, checked against the provider
 * config's allowlist; the role ECS registers is looked at in moto.
 */
import assert from "node:assert/strict";
import type { ServiceAccount } from "kubernetes-types/core/v1.d.ts";
import { isInvalidInput, isTransient, type ProviderKubeClient } from "../../../provider/mod.ts";
import { motoPod, startProviderOnMoto } from "./_provider.ts";

const CALL = { signal: AbortSignal.timeout(30_000) };
const ROLE = (name: string) => `arn:aws:iam::123456789012:role/${name}`;
const ANNOTATION = "fargate.vkubelet.io/task-role-arn";

/** A client whose only ServiceAccounts are `accounts` (name → annotations). */
function kubeWith(accounts: Record<string, Record<string, string>>): ProviderKubeClient {
  const get = (namespace: string, name: string): Promise<ServiceAccount> => {
    const annotations = accounts[name];
    if (annotations === undefined) {
      const err = Object.assign(new Error(`serviceaccounts "${name}" not found`), {
        name: "KubeApiError",
        code: 404,
        reason: "NotFound",
      });
      return Promise.reject(err);
    }
    return Promise.resolve({ metadata: { namespace, name, annotations } });
  };
  return {
    serviceAccounts: { get, createToken: () => Promise.reject(new Error("not in this test")) },
  } as unknown as ProviderKubeClient;
}

Deno.test("a pod's task role is named by its ServiceAccount, within the allowlist", async (t) => {
  const kube = kubeWith({
    billing: { [ANNOTATION]: ROLE("billing") },
    rogue: { [ANNOTATION]: ROLE("admin") },
    default: {},
  });
  const env = await startProviderOnMoto({
    taskRoleArn: ROLE("app"),
    allowedTaskRoleArns: [ROLE("billing"), ROLE("reports")],
  }, kube);
  try {
    await t.step("the annotated account's role is the task definition's", async () => {
      const pod = motoPod("billing-api", { serviceAccountName: "billing" });
      await env.provider.createPod(pod, CALL);
      assert.equal((await env.activeDefinition(pod)).taskRoleArn, ROLE("billing"));
      await env.provider.deletePod(pod, CALL);
    });

    await t.step("an account without the annotation gets the config's default", async () => {
      const pod = motoPod("plain");
      await env.provider.createPod(pod, CALL);
      assert.equal((await env.activeDefinition(pod)).taskRoleArn, ROLE("app"));
      await env.provider.deletePod(pod, CALL);
    });

    await t.step("a role outside the allowlist fails the pod, registering nothing", async () => {
      const pod = motoPod("sneaky", { serviceAccountName: "rogue" });
      await assert.rejects(env.provider.createPod(pod, CALL), (err: Error) => {
        assert.ok(isInvalidInput(err), String(err));
        assert.match(err.message, /team-a\/rogue.*role\/admin.*allowedTaskRoleArns/);
        return true;
      });
      assert.deepEqual(await env.definitionsOf(pod, "ACTIVE"), []);
    });

    await t.step("a missing account is retried, naming it", async () => {
      const pod = motoPod("orphan", { serviceAccountName: "gone" });
      await assert.rejects(env.provider.createPod(pod, CALL), (err: Error) => {
        assert.ok(isTransient(err), String(err));
        assert.match(err.message, /serviceaccount team-a\/gone.*does not exist/);
        return true;
      });
    });
  } finally {
    await env.close();
  }
});
