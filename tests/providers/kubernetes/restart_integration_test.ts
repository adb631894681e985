/**
 * Issue 24, bug 2: after a vkubelet restart the pods already in B get their per-name ConfigMap
 * watches and their upstream token renewal back (before, the update path the core takes for
 * them started neither: ConfigMap changes stopped reaching B, tokens expired after an hour).
 */
import assert from "node:assert/strict";
import { twoClusters } from "./_setup.ts";
import { eventually } from "../../../tools/harness/wait.ts";

Deno.test("kubernetes provider: after a restart a ConfigMap change still reaches B, tokens are renewed", async () => {
  const env = await twoClusters({ providerConfig: { serviceAccountToken: "upstream" } });
  const kubectlA = env.a.kubectlIn(env.namespaceA);
  try {
    await kubectlA(["create", "configmap", "settings", "--from-literal=key=v1"]);
    await kubectlA(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "reader", namespace: env.namespaceA },
        spec: {
          ...env.placement,
          terminationGracePeriodSeconds: 0,
          containers: [{
            name: "main",
            image: "busybox",
            command: ["sleep", "3600"],
            volumeMounts: [{ name: "config", mountPath: "/etc/config" }],
          }],
          volumes: [{ name: "config", configMap: { name: "settings" } }],
        },
      }),
    );
    await eventually("the pod Running in A", async () => {
      const pod = await env.adminA.pods.get(env.namespaceA, "reader");
      return pod.status?.phase === "Running";
    }, 90_000);
    const tokenSecret = `${env.namespaceA}.reader.token`;
    const tokenBefore = (await env.adminB.secrets.get(env.namespaceB, tokenSecret)).data?.[
      "token-0"
    ];
    assert.ok(tokenBefore, "the upstream token Secret in B");

    await env.restartVirtualNode();

    await kubectlA(["patch", "configmap", "settings", "-p", '{"data":{"key":"v2"}}']);
    await eventually("the copy in B to say v2", async () => {
      const copy = await env.adminB.configMaps.get(env.namespaceB, `${env.namespaceA}.settings`);
      return copy.data?.key === "v2";
    }, 30_000);
    await eventually("the token in B renewed by the new process", async () => {
      const secret = await env.adminB.secrets.get(env.namespaceB, tokenSecret);
      return secret.data?.["token-0"] !== tokenBefore;
    }, 30_000);
    await eventually(
      "the file in the pod to say v2",
      async () =>
        (await kubectlA(["exec", "reader", "--", "cat", "/etc/config/key"])).trim() === "v2",
      90_000,
    );
  } finally {
    await env.a.kubectl(["delete", "namespace", env.namespaceA, "--wait=false"]);
    await env.close();
  }
});
