/**
 * A pod in a VNet as ACI is asked to run it, through Prism with Azure's 2023-05-01
 * specification (which answers 422 to a request that breaks it): the pod's subnet annotation,
 * the cluster's DNS for ClusterFirst as the kubelet writes it, azure-aci's kube-proxy extension,
 * and the DNS name label annotation as azure-aci spells it.
 */
import assert from "node:assert/strict";
import { isInvalidInput } from "../../../provider/mod.ts";
import { aciPod, startProviderOnAci, until } from "../../../tools/harness/aci/env.ts";

const SUBNET =
  "/subscriptions/00000000-0000-4000-8000-000000000047/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/v/subnets/pods";

const running = (env: Awaited<ReturnType<typeof startProviderOnAci>>, name: string) =>
  until(`${name} Running`, async () => {
    const p = await env.provider.getPod("team-a", name, {});
    return p?.status?.phase === "Running" ? p : undefined;
  });

Deno.test("a ClusterFirst pod in a VNet gets the cluster's DNS and the kube-proxy extension", async () => {
  const kubeconfig = await Deno.makeTempFile({ suffix: ".kubeconfig" });
  await Deno.writeTextFile(kubeconfig, "apiVersion: v1\nkind: Config\n");
  const env = await startProviderOnAci({
    clusterDNS: ["10.0.0.10"],
    clusterDomain: "cluster.local",
    kubeProxy: { clusterCidr: "10.244.0.0/16", kubeconfig },
  });
  try {
    const pod = aciPod("web", {
      dnsConfig: { searches: ["corp.example"], options: [{ name: "ndots", value: "2" }] },
    });
    pod.metadata!.annotations = { "vkubelet.io/aci-subnet-ids": SUBNET };
    await env.provider.createPod(pod, {});
    await running(env, "web");
    const [group] = [...env.emu.groups.values()];
    const p = group.body.properties;
    assert.deepEqual(p.subnetIds, [{ id: SUBNET }]);
    assert.equal(p.ipAddress.type, "Private");
    // pkg/kubelet/network/dns/dns.go: cluster searches first, the pod's appended, its ndots wins.
    assert.deepEqual(p.dnsConfig, {
      nameServers: ["10.0.0.10"],
      searchDomains: "team-a.svc.cluster.local svc.cluster.local cluster.local corp.example",
      options: "ndots:2",
    });
    assert.deepEqual(p.extensions, [{
      name: "kube-proxy",
      properties: {
        extensionType: "kube-proxy",
        version: "1.0",
        settings: { clusterCidr: "10.244.0.0/16", kubeVersion: "v1.9.10" },
        protectedSettings: { kubeConfig: btoa("apiVersion: v1\nkind: Config\n") },
      },
    }]);
    assert.deepEqual(env.violations(), []);
  } finally {
    await env.close();
    await Deno.remove(kubeconfig);
  }
});

Deno.test("outside a VNet a ClusterFirst pod keeps ACI's resolver; Default never gets the cluster's", async () => {
  const env = await startProviderOnAci({ clusterDNS: ["10.0.0.10"] });
  try {
    const pod = aciPod("public", {
      containers: [{ name: "main", image: "busybox", ports: [{ containerPort: 80 }] }],
    });
    pod.metadata!.annotations = { "virtualkubelet.io/dnsnamelabel": "team-a-web" };
    await env.provider.createPod(pod, {});
    const vnetDefault = aciPod("default-dns", { dnsPolicy: "Default" });
    vnetDefault.metadata!.annotations = { "vkubelet.io/aci-subnet-ids": SUBNET };
    await env.provider.createPod(vnetDefault, {});
    await running(env, "public");
    await running(env, "default-dns");
    const byPod = (name: string) =>
      [...env.emu.groups.values()].find((g) => g.body.tags["vkubelet-pod"] === name)!.body
        .properties;
    assert.equal(byPod("public").dnsConfig, undefined, "the cluster's DNS is unreachable there");
    assert.deepEqual(byPod("public").ipAddress, {
      type: "Public",
      ports: [{ port: 80, protocol: "TCP" }],
      dnsNameLabel: "team-a-web",
    });
    assert.equal(byPod("default-dns").dnsConfig, undefined);
    assert.deepEqual(env.violations(), []);
  } finally {
    await env.close();
  }
});

Deno.test("a bad subnet annotation, or a DNS name label on a private IP, fails the pod naming the annotation", async () => {
  const env = await startProviderOnAci();
  try {
    const bad = aciPod("bad-subnet");
    bad.metadata!.annotations = { "vkubelet.io/aci-subnet-ids": "pods" };
    await assert.rejects(
      env.provider.createPod(bad, {}),
      (err: Error) =>
        isInvalidInput(err) && /vkubelet\.io\/aci-subnet-ids.*"pods"/.test(err.message),
    );
    const label = aciPod("label-in-vnet");
    label.metadata!.annotations = {
      "vkubelet.io/aci-subnet-ids": SUBNET,
      "virtualkubelet.io/dnsnamelabel": "web",
    };
    await assert.rejects(
      env.provider.createPod(label, {}),
      (err: Error) => isInvalidInput(err) && /dnsnamelabel.*public IP/.test(err.message),
    );
    const portless = aciPod("label-no-ports");
    portless.metadata!.annotations = { "virtualkubelet.io/dnsnamelabel": "web" };
    await assert.rejects(
      env.provider.createPod(portless, {}),
      (err: Error) => isInvalidInput(err) && /dnsnamelabel.*add a containerPort/.test(err.message),
    );
    assert.equal(env.emu.groups.size, 0, "nothing was sent");
  } finally {
    await env.close();
  }
});
