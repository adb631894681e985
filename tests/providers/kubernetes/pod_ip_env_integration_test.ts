/**
 * Issue 24, bug 1: env fieldRefs to the pod and host IP are B's to resolve (B assigns the IP),
 * and values the core already expanded are not expanded a second time by B's kubelet.
 */
import assert from "node:assert/strict";
import { twoClusters } from "./_setup.ts";
import { eventually } from "../../../tools/harness/wait.ts";

Deno.test("kubernetes provider: POD_IP in B is the pod's IP; env is expanded once", async () => {
  const env = await twoClusters();
  const kubectlA = env.a.kubectlIn(env.namespaceA);
  try {
    const field = (fieldPath: string) => ({ valueFrom: { fieldRef: { fieldPath } } });
    await kubectlA(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "addr", namespace: env.namespaceA },
        spec: {
          ...env.placement,
          terminationGracePeriodSeconds: 0,
          containers: [{
            name: "main",
            image: "busybox",
            command: ["sleep", "3600"],
            env: [
              { name: "PLAIN", value: "x" },
              { name: "POD_IP", ...field("status.podIP") },
              { name: "POD_IPS", ...field("status.podIPs") },
              { name: "HOST_IP", ...field("status.hostIP") },
              { name: "LISTEN", value: "$(POD_IP):8080" },
              { name: "LITERAL", value: "$$(PLAIN)-$(PLAIN)" },
            ],
          }],
        },
      }),
    );
    const ip = await eventually("the pod Running in A with an IP", async () => {
      const pod = await env.adminA.pods.get(env.namespaceA, "addr");
      return pod.status?.phase === "Running" && pod.status.podIP;
    }, 90_000);
    const out = await kubectlA([
      "exec",
      "addr",
      "--",
      "sh",
      "-c",
      'echo "$POD_IP|$POD_IPS|$HOST_IP|$LISTEN|$LITERAL"',
    ]);
    const down = await env.adminB.pods.get(env.namespaceB, `${env.namespaceA}.addr`);
    assert.equal(
      out.trim(),
      `${ip}|${ip}|${down.status?.hostIP}|${ip}:8080|$(PLAIN)-x`,
      "env in B",
    );
    // B's pod keeps the fieldRef: B's kubelet resolved it.
    const podIpVar = down.spec?.containers[0].env?.find((e) => e.name === "POD_IP");
    assert.equal(podIpVar?.valueFrom?.fieldRef?.fieldPath, "status.podIP");
  } finally {
    await env.a.kubectl(["delete", "namespace", env.namespaceA, "--wait=false"]);
    await env.close();
  }
});
