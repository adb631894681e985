/**
 * A pod's container group gets the user-assigned managed identity its ServiceAccount names, when
 * the provider config's `allowedIdentities` allows it for the pod's namespace: through the
 * provider against the emulator behind Prism (the group's `identity` checked against Azure's
 * 2023-05-01 specification), and the attacks — namespace b naming namespace a's identity, a pod
 * naming an identity no namespace may use — refused with the reason before anything is sent.
 */
import assert from "node:assert/strict";
import type { Pod, ServiceAccount } from "kubernetes-types/core/v1.d.ts";
import { isInvalidInput, isTransient, type ProviderKubeClient } from "../../../provider/mod.ts";
import { parseAciConfig } from "../../../providers/aci/config.ts";
import { aciPod, startProviderOnAci } from "../../../tools/harness/aci/env.ts";

const call = () => ({ signal: AbortSignal.timeout(30_000) });
const ANNOTATION = "aci.vkubelet.io/managed-identity";
const SUB = "00000000-0000-4000-8000-000000000047";
const ID = (name: string) =>
  `/subscriptions/${SUB}/resourceGroups/ids/providers/Microsoft.ManagedIdentity/userAssignedIdentities/${name}`;

/** A client whose only ServiceAccounts are `accounts` (namespace/name → annotations). */
function kubeWith(accounts: Record<string, Record<string, string>>): ProviderKubeClient {
  const get = (namespace: string, name: string): Promise<ServiceAccount> => {
    const annotations = accounts[`${namespace}/${name}`];
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

function podIn(namespace: string, name: string, serviceAccountName: string): Pod {
  const pod = aciPod(name, { serviceAccountName });
  return { ...pod, metadata: { ...pod.metadata, namespace } };
}

const ALLOWED = { "team-a": [ID("team-a-app")], "team-b": [ID("team-b-*")] };

Deno.test("a pod's ServiceAccount names its group's managed identity, per namespace", async (t) => {
  const kube = kubeWith({
    "team-a/app": { [ANNOTATION]: ID("team-a-app") },
    "team-b/app": { [ANNOTATION]: ID("team-b-reports") },
    // The attacks: team b names team a's identity; someone names one no namespace may use.
    "team-b/thief": { [ANNOTATION]: ID("team-a-app") },
    "team-a/greedy": { [ANNOTATION]: ID("subscription-owner") },
    "team-a/sloppy": { [ANNOTATION]: "team-a-app" },
    "team-a/default": {},
  });
  const env = await startProviderOnAci({ allowedIdentities: ALLOWED }, kube);
  const sent = () => env.emu.requests.filter((r) => r.startsWith("PUT ")).length;
  const groupOf = (pod: string) =>
    [...env.emu.groups.values()].find((g) => g.body.tags["vkubelet-pod"] === pod)!;
  try {
    await t.step("the named identity goes on the group as UserAssigned", async () => {
      const pod = podIn("team-a", "api", "app");
      await env.provider.createPod(pod, call());
      assert.deepEqual(groupOf("api").body.identity, {
        type: "UserAssigned",
        userAssignedIdentities: { [ID("team-a-app")]: {} },
      });
      await env.provider.deletePod(pod, call());
    });

    await t.step("a pattern of the namespace's list allows the identity", async () => {
      const pod = podIn("team-b", "reports", "app");
      await env.provider.createPod(pod, call());
      assert.deepEqual(Object.keys(groupOf("reports").body.identity.userAssignedIdentities), [
        ID("team-b-reports"),
      ]);
      await env.provider.deletePod(pod, call());
    });

    await t.step("an account without the annotation gets no identity", async () => {
      const pod = podIn("team-a", "plain", "default");
      await env.provider.createPod(pod, call());
      assert.equal(groupOf("plain").body.identity, undefined);
      await env.provider.deletePod(pod, call());
    });

    await t.step("namespace b naming namespace a's identity is refused", async () => {
      const before = sent();
      await assert.rejects(
        env.provider.createPod(podIn("team-b", "steal", "thief"), call()),
        (err: Error) => {
          assert.ok(isInvalidInput(err), String(err));
          assert.match(
            err.message,
            /serviceaccount team-b\/thief.*team-a-app.*does not allow in namespace team-b.*allowedIdentities\.team-b/,
          );
          return true;
        },
      );
      assert.equal(sent(), before, "no container group was sent");
    });

    await t.step("an identity no namespace may use is refused", async () => {
      const before = sent();
      await assert.rejects(
        env.provider.createPod(podIn("team-a", "grab", "greedy"), call()),
        (err: Error) => {
          assert.ok(isInvalidInput(err), String(err));
          assert.match(err.message, /subscription-owner.*does not allow in namespace team-a/);
          return true;
        },
      );
      assert.equal(sent(), before, "no container group was sent");
    });

    await t.step(
      "an annotation that is not a resource ID is refused, naming the form",
      async () => {
        await assert.rejects(
          env.provider.createPod(podIn("team-a", "typo", "sloppy"), call()),
          (err: Error) => {
            assert.ok(isInvalidInput(err), String(err));
            assert.match(err.message, /not the resource ID of one user-assigned managed identity/);
            return true;
          },
        );
      },
    );

    await t.step("a missing account is retried, naming it", async () => {
      await assert.rejects(
        env.provider.createPod(podIn("team-a", "orphan", "gone"), call()),
        (err: Error) => {
          assert.ok(isTransient(err), String(err));
          assert.match(err.message, /serviceaccount team-a\/gone.*does not exist/);
          return true;
        },
      );
    });
    assert.deepEqual(env.violations(), [], "every request and reply kept Azure's specification");
  } finally {
    await env.close();
  }
});

Deno.test("allowedIdentities takes namespaces and identity resource IDs only", () => {
  const parsed = parseAciConfig({
    subscriptionId: SUB,
    resourceGroup: "rg",
    location: "westeurope",
    allowedIdentities: { "Team_A": [ID("x")], "team-b": ["arn:aws:iam::1:role/x"] },
  });
  assert.ok(!parsed.ok);
  const text = parsed.errors.join("\n");
  assert.match(text, /allowedIdentities\.Team_A.*not a namespace name/);
  assert.match(text, /allowedIdentities\.team-b\.0.*not a user-assigned managed identity/);
});
