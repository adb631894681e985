/**
 * A pod's ECS task role comes from its ServiceAccount's annotation, checked against the provider
 * config's allowlist for the pod's namespace (unit tests on `taskRoleFor` with a fake client:
 * namespace b may not take namespace a's role; the old global list is refused with the way out);
 * the role ECS registers is looked at in moto.
 */
import assert from "node:assert/strict";
import type { Pod, ServiceAccount } from "kubernetes-types/core/v1.d.ts";
import { isInvalidInput, isTransient, type ProviderKubeClient } from "../../../provider/mod.ts";
import { type FargateConfig, parseFargateConfig } from "../../../providers/fargate/config.ts";
import { taskRoleFor } from "../../../providers/fargate/task_role.ts";
import { motoPod, startProviderOnMoto } from "./_provider.ts";

// A deadline per call, not per file: starting moto on a loaded machine took 41 s.
const call = () => ({ signal: AbortSignal.timeout(30_000) });
const ROLE = (name: string) => `arn:aws:iam::123456789012:role/${name}`;
const ANNOTATION = "fargate.vkubelet.io/task-role-arn";

/** A client whose only ServiceAccounts are `accounts` (name or namespace/name → annotations). */
function kubeWith(accounts: Record<string, Record<string, string>>): ProviderKubeClient {
  const get = (namespace: string, name: string): Promise<ServiceAccount> => {
    const annotations = accounts[`${namespace}/${name}`] ?? accounts[name];
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
    allowedTaskRoles: { "team-a": [ROLE("billing"), ROLE("reports")] },
  }, kube);
  try {
    await t.step("the annotated account's role is the task definition's", async () => {
      const pod = motoPod("billing-api", { serviceAccountName: "billing" });
      await env.provider.createPod(pod, call());
      assert.equal((await env.activeDefinition(pod)).taskRoleArn, ROLE("billing"));
      await env.provider.deletePod(pod, call());
    });

    await t.step("an account without the annotation gets the config's default", async () => {
      const pod = motoPod("plain");
      await env.provider.createPod(pod, call());
      assert.equal((await env.activeDefinition(pod)).taskRoleArn, ROLE("app"));
      await env.provider.deletePod(pod, call());
    });

    await t.step("a role outside the allowlist fails the pod, registering nothing", async () => {
      const pod = motoPod("sneaky", { serviceAccountName: "rogue" });
      await assert.rejects(env.provider.createPod(pod, call()), (err: Error) => {
        assert.ok(isInvalidInput(err), String(err));
        assert.match(err.message, /team-a\/rogue.*role\/admin.*allowedTaskRoles\.team-a/);
        return true;
      });
      assert.deepEqual(await env.definitionsOf(pod, "ACTIVE"), []);
    });

    await t.step("a missing account is retried, naming it", async () => {
      const pod = motoPod("orphan", { serviceAccountName: "gone" });
      await assert.rejects(env.provider.createPod(pod, call()), (err: Error) => {
        assert.ok(isTransient(err), String(err));
        assert.match(err.message, /serviceaccount team-a\/gone.*does not exist/);
        return true;
      });
    });
  } finally {
    await env.close();
  }
});

/** The fargate config with `extra`, validated. */
function configWith(extra: Record<string, unknown>): FargateConfig {
  const parsed = parseFargateConfig({
    region: "eu-west-1",
    subnets: ["subnet-0123456789abcdef0"],
    executionRoleArn: ROLE("exec"),
    ...extra,
  });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  return parsed.config;
}

function podIn(namespace: string, serviceAccountName: string): Pod {
  return {
    metadata: { namespace, name: "p", uid: crypto.randomUUID() },
    spec: { serviceAccountName, containers: [{ name: "main", image: "busybox" }] },
  };
}

const TEAM_ROLES = {
  "team-a": [ROLE("team-a-deployer")],
  "team-b": [ROLE("team-b-*")],
};

Deno.test("namespace b's ServiceAccount cannot take namespace a's role", async () => {
  // The attack: team b owns namespace team-b and names team a's role on its own account.
  const kube = kubeWith({
    "team-b/thief": { [ANNOTATION]: ROLE("team-a-deployer") },
    "team-a/deployer": { [ANNOTATION]: ROLE("team-a-deployer") },
  });
  const config = configWith({ allowedTaskRoles: TEAM_ROLES });
  await assert.rejects(taskRoleFor(podIn("team-b", "thief"), config, { kube }), (err: Error) => {
    assert.ok(isInvalidInput(err), String(err));
    assert.match(
      err.message,
      /serviceaccount team-b\/thief: .* names arn:aws:iam::123456789012:role\/team-a-deployer, which the provider config's allowedTaskRoles does not allow in namespace team-b .*allowedTaskRoles\.team-b/,
    );
    return true;
  });
  // Team a's own account still gets it.
  const own = await taskRoleFor(podIn("team-a", "deployer"), config, { kube });
  assert.equal(own.arn, ROLE("team-a-deployer"));
});

Deno.test('a namespace\'s patterns match its roles, and the "*" list applies to every namespace', async () => {
  const kube = kubeWith({
    "team-b/api": { [ANNOTATION]: ROLE("team-b-api") },
    "team-b/other": { [ANNOTATION]: ROLE("team-bx") },
    "team-c/reader": { [ANNOTATION]: ROLE("shared-reader") },
    "team-c/api": { [ANNOTATION]: ROLE("team-b-api") },
  });
  const config = configWith({
    allowedTaskRoles: { ...TEAM_ROLES, "*": [ROLE("shared-reader")] },
  });
  assert.equal(
    (await taskRoleFor(podIn("team-b", "api"), config, { kube })).arn,
    ROLE("team-b-api"),
  );
  await assert.rejects(taskRoleFor(podIn("team-b", "other"), config, { kube }), /team-bx/);
  assert.equal(
    (await taskRoleFor(podIn("team-c", "reader"), config, { kube })).arn,
    ROLE("shared-reader"),
  );
  // team-b's pattern is team-b's: a namespace without an entry gets only the "*" list.
  await assert.rejects(
    taskRoleFor(podIn("team-c", "api"), config, { kube }),
    /allowedTaskRoles\.team-c/,
  );
});

Deno.test("an annotation that is not one role's ARN is refused, wildcards included", async () => {
  const kube = kubeWith({ "team-b/greedy": { [ANNOTATION]: ROLE("team-b-*") } });
  const config = configWith({ allowedTaskRoles: TEAM_ROLES });
  await assert.rejects(
    taskRoleFor(podIn("team-b", "greedy"), config, { kube }),
    (err: Error) => isInvalidInput(err) && /not the ARN of one IAM role/.test(err.message),
  );
});

Deno.test("the old global allowedTaskRoleArns is a config error that says how to migrate", () => {
  const parsed = parseFargateConfig({
    region: "eu-west-1",
    subnets: ["subnet-0123456789abcdef0"],
    executionRoleArn: ROLE("exec"),
    allowedTaskRoleArns: [ROLE("billing")],
  });
  assert.equal(parsed.ok, false);
  const errors = !parsed.ok ? parsed.errors.join("\n") : "";
  assert.match(
    errors,
    /^allowedTaskRoleArns: .*replace it with allowedTaskRoles, a map from namespace/m,
  );
  assert.match(errors, /under the namespace "\*"/);
});

Deno.test("allowedTaskRoles refuses a pattern that would reach another account, and bad keys", () => {
  const parsed = parseFargateConfig({
    region: "eu-west-1",
    subnets: ["subnet-0123456789abcdef0"],
    executionRoleArn: ROLE("exec"),
    allowedTaskRoles: { "team-a": ["arn:aws:iam::*:role/x"], "Team_A": [ROLE("x")] },
  });
  assert.equal(parsed.ok, false);
  const errors = !parsed.ok ? parsed.errors.join("\n") : "";
  assert.match(errors, /allowedTaskRoles\.team-a\.0: is not an IAM role ARN/);
  assert.match(errors, /allowedTaskRoles.*is not a namespace name/);
});
