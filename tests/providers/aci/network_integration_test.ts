/**
 * A pod in a VNet reaching a Service, through kubectl against the local control plane and the
 * ACI emulator behind Prism: the group ACI is asked for carries the subnet of the pod's
 * annotation, the cluster's DNS (nameserver, the namespace's search domains, ndots:5) so that
 * `backend` resolves to the Service, the Service's environment variables as the kubelet sets
 * them, and azure-aci's kube-proxy extension, which routes the Service's cluster IP from inside
 * the group. Nothing dials: what ACI would do with them is ACI's.
 */
import assert from "node:assert/strict";
import { startAciEnv } from "./_setup.ts";
import { eventually } from "../../../tools/harness/wait.ts";

const SUBNET =
  "/subscriptions/00000000-0000-4000-8000-000000000047/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/v/subnets/pods";

Deno.test("aci provider: a VNet pod gets the cluster's DNS and kube-proxy to reach a Service", async () => {
  const kubeconfig = await Deno.makeTempFile({ suffix: ".kubeconfig" });
  await Deno.writeTextFile(kubeconfig, "apiVersion: v1\nkind: Config\n");
  const env = await startAciEnv("acidns", {
    clusterDNS: ["10.0.0.10"],
    kubeProxy: { clusterCidr: "10.244.0.0/16", kubeconfig },
  });
  try {
    await env.kubectl(["create", "service", "clusterip", "backend", "--tcp=80:8080"]);
    const service = JSON.parse(await env.kubectl(["get", "service", "backend", "-o", "json"]));
    await env.kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          name: "client",
          annotations: { "vkubelet.io/aci-subnet-ids": SUBNET },
        },
        spec: {
          ...env.placement,
          containers: [{
            name: "main",
            image: "busybox",
            command: ["sh", "-c", "sleep 3600"],
          }],
        },
      }),
    );
    await eventually("client Running", async () => {
      const [pod] = await env.pods("!nothing").then((ps) =>
        ps.filter((p) => p.metadata?.name === "client")
      );
      return pod?.status?.phase === "Running" || undefined;
    }, 60_000);
    const [group] = env.groupsOf("client");
    const p = group.body.properties;
    assert.deepEqual(p.subnetIds, [{ id: SUBNET }]);
    assert.deepEqual(p.dnsConfig, {
      nameServers: ["10.0.0.10"],
      searchDomains: `${env.ns}.svc.cluster.local svc.cluster.local cluster.local`,
      options: "ndots:5",
    });
    const envVars = Object.fromEntries(
      p.containers[0].properties.environmentVariables.map((
        e: { name: string; value?: string },
      ) => [e.name, e.value]),
    );
    assert.equal(envVars.BACKEND_SERVICE_HOST, service.spec.clusterIP);
    assert.equal(envVars.BACKEND_SERVICE_PORT, "80");
    assert.equal(p.extensions[0].properties.extensionType, "kube-proxy");
    assert.equal(p.extensions[0].properties.settings.clusterCidr, "10.244.0.0/16");
    assert.deepEqual(env.backend.violations(), []);
  } finally {
    await env.close();
    await Deno.remove(kubeconfig);
  }
});
