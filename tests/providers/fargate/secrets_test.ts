/**
 * Secret-sourced env values go through Secrets Manager and ECS `secrets`, never into the task
 * definition's plain env, and nothing of a pod stays in AWS after it is deleted: its secret is
 * deleted at once and its task definition deregistered and deleted (moto has all of it).
 */
import assert from "node:assert/strict";
import { GetSecretValueCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { motoPod, startProviderOnMoto } from "./_provider.ts";

const CALL = { signal: AbortSignal.timeout(30_000) };

/** A pod as the core hands it to a provider with `secretEnvRefs`: values resolved, refs marked. */
function podWithSecret(password: string): Pod {
  return motoPod("db-client", {
    containers: [{
      name: "main",
      image: "busybox",
      env: [
        { name: "MODE", value: "prod" },
        {
          name: "PASSWORD",
          value: password,
          valueFrom: { secretKeyRef: { name: "creds", key: "password" } },
        },
      ],
    }],
  });
}

Deno.test("a pod's Secret values live in Secrets Manager only as long as the pod", async (t) => {
  const env = await startProviderOnMoto();
  const secrets = new SecretsManagerClient({
    region: env.moto.region,
    endpoint: env.moto.endpoint,
    credentials: { accessKeyId: "testing", secretAccessKey: "testing" },
  });
  const pod = podWithSecret("s3cret-1");
  const changed = { ...podWithSecret("s3cret-2"), metadata: pod.metadata };
  const name = `vkubelet/team-a/db-client/${pod.metadata!.uid}`;
  const stored = async () => {
    const out = await secrets.send(new GetSecretValueCommand({ SecretId: name }));
    return JSON.parse(out.SecretString ?? "{}");
  };
  try {
    assert.equal(env.provider.secretEnvRefs, true, "the core is asked to mark Secret values");

    await t.step("the value is an ECS secret, not plain env of the task definition", async () => {
      await env.provider.createPod(pod, CALL);
      const def = await env.activeDefinition(pod);
      assert.doesNotMatch(JSON.stringify(def), /s3cret-1/);
      const main = def.containerDefinitions![0];
      assert.deepEqual(main.environment, [{ name: "MODE", value: "prod" }]);
      assert.equal(main.secrets?.length, 1);
      assert.equal(main.secrets![0].name, "PASSWORD");
      assert.match(main.secrets![0].valueFrom!, /^arn:aws:secretsmanager:.*:main\/PASSWORD::$/);
      assert.deepEqual(await stored(), { "main/PASSWORD": "s3cret-1" });
    });

    await t.step("a changed Secret value is written for the next task", async () => {
      await env.provider.updatePod(changed, CALL);
      assert.deepEqual(await stored(), { "main/PASSWORD": "s3cret-2" });
    });

    await t.step("deleting the pod deletes its secret and its task definition", async () => {
      await env.provider.deletePod(pod, CALL);
      await assert.rejects(stored(), (err: Error) => err.name === "ResourceNotFoundException");
      assert.deepEqual(await env.definitionsOf(pod, "ACTIVE"), []);
      assert.deepEqual(await env.definitionsOf(pod, "INACTIVE"), [], "INACTIVE ones are deleted");
    });
  } finally {
    secrets.destroy();
    await env.close();
  }
});
