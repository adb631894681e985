/**
 * Issue 24, item 7: in upstream-token mode, a pod in B reaches A's apiserver at the configured
 * `upstreamApiServer` through the usual `KUBERNETES_SERVICE_HOST`/`PORT` variables, as its own
 * service account of A (before, they named A's `kubernetes` ClusterIP, which B cannot route).
 */
import assert from "node:assert/strict";
import { useCluster } from "../../../tools/cluster/harness.ts";
import { twoClusters } from "./_setup.ts";
import { eventually } from "../../../tools/harness/wait.ts";

Deno.test("kubernetes provider: KUBERNETES_SERVICE_HOST/PORT in B lead to A's apiserver", async () => {
  const a = new URL((await useCluster()).server);
  const env = await twoClusters({
    providerConfig: { serviceAccountToken: "upstream", upstreamApiServer: a.origin },
  });
  const kubectlA = env.a.kubectlIn(env.namespaceA);
  try {
    await kubectlA(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "client", namespace: env.namespaceA },
        spec: {
          ...env.placement,
          terminationGracePeriodSeconds: 0,
          containers: [{ name: "main", image: "busybox", command: ["sleep", "3600"] }],
        },
      }),
    );
    await eventually("the pod Running in A", async () => {
      const pod = await env.adminA.pods.get(env.namespaceA, "client");
      return pod.status?.phase === "Running";
    }, 90_000);
    const sa = "/var/run/secrets/kubernetes.io/serviceaccount";
    const out = await kubectlA([
      "exec",
      "client",
      "--",
      "sh",
      "-c",
      'echo "$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"; ' +
      `curl -sS --cacert ${sa}/ca.crt -H "Authorization: Bearer $(cat ${sa}/token)" ` +
      '-H "Content-Type: application/json" -X POST ' +
      '-d \'{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}\' ' +
      '"https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/apis/authentication.k8s.io/v1/selfsubjectreviews"',
    ]);
    const [address, ...body] = out.split("\n");
    assert.equal(address, `${a.hostname}:${a.port}`);
    const review = JSON.parse(body.join("\n"));
    assert.equal(
      review.status?.userInfo?.username,
      `system:serviceaccount:${env.namespaceA}:default`,
      out,
    );
  } finally {
    await env.a.kubectl(["delete", "namespace", env.namespaceA, "--wait=false"]);
    await env.close();
  }
});
