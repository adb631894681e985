/**
 * Issue 24, item 3 (a): `namespaces: same` keeps A's namespace names in B. A pod of A's
 * namespace runs in B's namespace of that name under its own name, with its ConfigMap under its
 * own name; the namespace is created on demand and removed when its last pod goes.
 */
import assert from "node:assert/strict";
import { twoClusters } from "./_setup.ts";
import { eventually } from "../../../tools/harness/wait.ts";

Deno.test("kubernetes provider: namespaces: same keeps A's names in B, the namespace goes with its last pod", async () => {
  const env = await twoClusters({ providerConfig: { namespaces: "same" } });
  const kubectlA = env.a.kubectlIn(env.namespaceA);
  const ns = env.namespaceA;
  try {
    await kubectlA(["create", "configmap", "settings", "--from-literal=key=v1"]);
    await kubectlA(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "reader", namespace: ns },
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
    const down = await eventually("the pod Running in B under A's namespace and name", async () => {
      const pod = await env.adminB.pods.get(ns, "reader");
      return pod.status?.phase === "Running" && pod;
    }, 90_000);
    assert.equal(down.spec?.volumes?.[0].configMap?.name, "settings");
    assert.equal((await env.adminB.configMaps.get(ns, "settings")).data?.key, "v1");
    const namespaceB = await env.adminB.namespaces.get(ns);
    assert.equal(
      namespaceB.metadata?.labels?.["vkubelet.io/virtual-node"],
      env.virtualNode.nodeName,
    );
    assert.equal(
      (await kubectlA(["exec", "reader", "--", "cat", "/etc/config/key"])).trim(),
      "v1",
      "exec in A reaches the pod in B's namespace",
    );
    await eventually("the pod Running in A", async () => {
      const pod = await env.adminA.pods.get(ns, "reader");
      return pod.status?.phase === "Running";
    }, 30_000);

    await kubectlA(["delete", "pod", "reader"]);
    await eventually("B's namespace gone with its last pod", async () => {
      try {
        await env.adminB.namespaces.get(ns);
        return false;
      } catch {
        return true;
      }
    }, 90_000);

    // A new pod brings the namespace back.
    await kubectlA(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "again", namespace: ns },
        spec: {
          ...env.placement,
          terminationGracePeriodSeconds: 0,
          containers: [{ name: "main", image: "busybox", command: ["sleep", "3600"] }],
        },
      }),
    );
    await eventually("the new pod Running in B's recreated namespace", async () => {
      const pod = await env.adminB.pods.get(ns, "again");
      return pod.status?.phase === "Running";
    }, 90_000);
  } finally {
    await env.a.kubectl(["delete", "namespace", ns, "--wait=false"]);
    await env.b.kubectl(["delete", "namespace", ns, "--wait=false", "--ignore-not-found"]);
    await env.close();
  }
});

Deno.test("kubernetes provider: syncServices copies the namespace's Services to B; service env comes from B's copies", async () => {
  const env = await twoClusters({ providerConfig: { namespaces: "same", syncServices: true } });
  const kubectlA = env.a.kubectlIn(env.namespaceA);
  const ns = env.namespaceA;
  try {
    await kubectlA(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "db", namespace: ns },
        spec: { selector: { app: "db" }, ports: [{ name: "pg", port: 5432, targetPort: 5432 }] },
      }),
    );
    await kubectlA(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "db-0", namespace: ns, labels: { app: "db" } },
        spec: {
          ...env.placement,
          terminationGracePeriodSeconds: 0,
          containers: [{ name: "main", image: "busybox", command: ["sleep", "3600"] }],
        },
      }),
    );
    await eventually("the pod Running in A", async () => {
      const pod = await env.adminA.pods.get(ns, "db-0");
      return pod.status?.phase === "Running";
    }, 90_000);
    const copy = await env.adminB.services.get(ns, "db");
    assert.equal(copy.metadata?.labels?.["vkubelet.io/role"], "service");
    assert.deepEqual(copy.spec?.selector, { app: "db" });
    const clusterIpB = copy.spec?.clusterIP;
    assert.ok(clusterIpB && clusterIpB !== "None");
    // No DNS runs in the local clusters: the synced object and the env B's kubelet sets show it.
    const out = await kubectlA([
      "exec",
      "db-0",
      "--",
      "sh",
      "-c",
      'echo "$DB_SERVICE_HOST:$DB_SERVICE_PORT_PG"',
    ]);
    assert.equal(out.trim(), `${clusterIpB}:5432`, "service env from B's copy");
    // B's endpoint controllers select the pod through the copy's selector, but refuse its
    // address here: the process provider's pod IPs are loopback, which Endpoints may not hold.
    await kubectlA(["delete", "service", "db"]);
    await eventually("the copy gone from B", async () => {
      try {
        await env.adminB.services.get(ns, "db");
        return false;
      } catch {
        return true;
      }
    }, 30_000);
  } finally {
    await env.a.kubectl(["delete", "namespace", ns, "--wait=false"]);
    await env.b.kubectl(["delete", "namespace", ns, "--wait=false", "--ignore-not-found"]);
    await env.close();
  }
});
