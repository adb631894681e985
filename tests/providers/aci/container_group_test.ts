/**
 * The pod → container group mapping and the config, without a backend: ACI's units and rounding,
 * limits refused with the field named, restart policies, DNS, VNet subnets, and every config
 * problem reported at once.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { isInvalidInput } from "../../../provider/mod.ts";
import { containerGroupFor, parseAciConfig } from "../../../providers/aci/mod.ts";
import { aciConfig } from "../../../tools/harness/aci/env.ts";

const parsed = parseAciConfig(aciConfig("https://management.azure.com", {
  subnetIds: [
    "/subscriptions/s/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/v/subnets/aci",
  ],
}));
if (!parsed.ok) throw new Error(parsed.errors.join("; "));
const config = parsed.config;
const inputs = {
  nodeName: "vk-0",
  restarts: 0,
  limits: { maxCpu: 4, maxMemoryInGB: 16 },
  volumes: [],
  credentials: [],
};

function pod(spec: Partial<NonNullable<Pod["spec"]>>): Pod {
  return {
    metadata: { namespace: "ns", name: "p", uid: "u-1" },
    spec: { containers: [{ name: "main", image: "busybox" }], ...spec },
  };
}

Deno.test("requests and limits become ACI cores and GB, rounded up", () => {
  const group = containerGroupFor(
    pod({
      containers: [{
        name: "main",
        image: "busybox",
        resources: { requests: { cpu: "250m", memory: "1Gi" }, limits: { cpu: "1", memory: "2G" } },
      }, { name: "side", image: "busybox" }],
    }),
    config,
    inputs,
  );
  assert.deepEqual(group.containers[0].resources, {
    requests: { cpu: 0.25, memoryInGB: 1.1 }, // 1Gi is 1.07 GB
    limits: { cpu: 1, memoryInGB: 2 },
  });
  assert.deepEqual(group.containers[1].resources, { requests: { cpu: 1, memoryInGB: 1.5 } });
});

Deno.test("a pod beyond ACI's per-group maximum is refused, naming the field", () => {
  assert.throws(
    () =>
      containerGroupFor(
        pod({
          containers: [{
            name: "main",
            image: "busybox",
            resources: { requests: { memory: "20Gi", "nvidia.com/gpu": "1" } },
          }],
        }),
        config,
        inputs,
      ),
    (err: Error) =>
      isInvalidInput(err) && /spec\.containers\[0\]\.resources\.requests\.nvidia\.com\/gpu/.test(
        err.message,
      ),
  );
  assert.throws(
    () =>
      containerGroupFor(
        pod({
          containers: [{ name: "main", image: "b", resources: { requests: { memory: "20Gi" } } }],
        }),
        config,
        inputs,
      ),
    /requests\.memory: the containers ask for 21\.5 GB together.*at most 16 GB/,
  );
});

Deno.test("restart policy, DNS config, VNet subnets and tags are carried over", () => {
  for (const policy of ["Always", "OnFailure", "Never"] as const) {
    const group = containerGroupFor(
      pod({
        restartPolicy: policy,
        dnsPolicy: "None",
        dnsConfig: {
          nameservers: ["10.0.0.10"],
          searches: ["a.svc", "b"],
          options: [{ name: "ndots", value: "2" }],
        },
      }),
      config,
      inputs,
    );
    assert.equal(group.restartPolicy, policy);
    assert.deepEqual(group.dnsConfig, {
      nameServers: ["10.0.0.10"],
      searchDomains: "a.svc b",
      options: "ndots:2",
    });
    assert.deepEqual(group.subnetIds, [{ id: config.subnetIds[0] }]);
    assert.deepEqual(group.ipAddress, { type: "Private", ports: [] });
    assert.equal(group.tags["vkubelet-uid"], "u-1");
  }
});

Deno.test("args without command are refused: ACI would drop the image's entrypoint", () => {
  assert.throws(
    () =>
      containerGroupFor(
        pod({ containers: [{ name: "m", image: "b", args: ["x"] }] }),
        config,
        inputs,
      ),
    /spec\.containers\[0\]\.args: .*set spec\.containers\[0\]\.command/,
  );
});

Deno.test("every config problem is reported at once, naming its field", () => {
  const bad = parseAciConfig({
    subscriptionId: "nope",
    location: "West Europe",
    endpoint: "http://10.0.0.1",
    statusInterval: "1ms",
    tags: { "vkubelet-node": "x" },
  });
  assert.ok(!bad.ok);
  const text = bad.errors.join("\n");
  for (
    const field of [
      "subscriptionId",
      "resourceGroup",
      "location",
      "endpoint",
      "statusInterval",
      "tags",
    ]
  ) {
    assert.match(text, new RegExp(`^${field}`, "m"), `${field} is named`);
  }
});

Deno.test("the security context ACI's API can express is carried, the pod's under the container's", () => {
  const group = containerGroupFor(
    pod({
      securityContext: { runAsUser: 1000, runAsGroup: 3000, runAsNonRoot: true },
      initContainers: [{ name: "init", image: "busybox", command: ["true"] }],
      containers: [{
        name: "main",
        image: "busybox",
        securityContext: {
          allowPrivilegeEscalation: false,
          capabilities: { drop: ["ALL"], add: ["NET_BIND_SERVICE"] },
          seccompProfile: { type: "RuntimeDefault" },
        },
      }],
    }),
    config,
    inputs,
  );
  assert.deepEqual(group.containers[0].securityContext, {
    allowPrivilegeEscalation: false,
    capabilities: { add: ["NET_BIND_SERVICE"], drop: ["ALL"] },
    runAsUser: 1000,
    runAsGroup: 3000,
  });
  assert.deepEqual(group.initContainers?.[0].securityContext, {
    runAsUser: 1000,
    runAsGroup: 3000,
  });
  const plain = containerGroupFor(pod({}), config, inputs);
  assert.equal("securityContext" in plain.containers[0], false);
});

Deno.test("what ACI cannot enforce fails the pod naming the field, never runs as the image's user", () => {
  const cases: [Partial<NonNullable<Pod["spec"]>>, RegExp][] = [
    [
      {
        containers: [{
          name: "main",
          image: "busybox",
          securityContext: { runAsNonRoot: true, capabilities: { drop: ["ALL"] } },
        }],
      },
      /spec\.containers\[0\]\.securityContext\.runAsNonRoot: ACI's container API has no field for it, so ACI cannot enforce it; set runAsUser to a non-zero uid/,
    ],
    [
      {
        securityContext: { runAsNonRoot: true },
        initContainers: [{
          name: "init",
          image: "busybox",
          command: ["true"],
          securityContext: { runAsUser: 0 },
        }],
        containers: [{ name: "main", image: "busybox", securityContext: { runAsUser: 7 } }],
      },
      /spec\.initContainers\[0\]\.securityContext\.runAsUser: 0 breaks the runAsNonRoot policy/,
    ],
    [
      {
        containers: [{
          name: "main",
          image: "busybox",
          securityContext: { readOnlyRootFilesystem: true },
        }],
      },
      /spec\.containers\[0\]\.securityContext\.readOnlyRootFilesystem: .*cannot enforce it/,
    ],
    [
      { securityContext: { seccompProfile: { type: "Localhost", localhostProfile: "p.json" } } },
      /spec\.containers\[0\]\.securityContext\.seccompProfile: .*cannot enforce it/,
    ],
  ];
  for (const [spec, message] of cases) {
    assert.throws(() => containerGroupFor(pod(spec), config, inputs), (err: Error) => {
      assert.ok(isInvalidInput(err), String(err));
      assert.match(err.message, message);
      return true;
    });
  }
});

Deno.test("cluster DNS follows the kubelet's rules: policies, hostNetwork, the pod's additions, the limit of 3", () => {
  const parsedDns = parseAciConfig(aciConfig("https://management.azure.com", {
    subnetIds: config.subnetIds,
    clusterDNS: ["10.0.0.10", "10.0.0.11"],
    clusterDomain: "corp.local",
  }));
  if (!parsedDns.ok) throw new Error(parsedDns.errors.join("; "));
  const dnsOf = (spec: Partial<NonNullable<Pod["spec"]>>) =>
    containerGroupFor(pod(spec), parsedDns.config, inputs).dnsConfig;
  const cluster = {
    nameServers: ["10.0.0.10", "10.0.0.11"],
    searchDomains: "ns.svc.corp.local svc.corp.local corp.local",
    options: "ndots:5",
  };
  assert.deepEqual(dnsOf({}), cluster, "ClusterFirst is the default");
  assert.deepEqual(dnsOf({ dnsPolicy: "ClusterFirstWithHostNet", hostNetwork: true }), cluster);
  // dns.go: ClusterFirst on the host network falls back to Default.
  assert.equal(dnsOf({ dnsPolicy: "ClusterFirst", hostNetwork: true }), undefined);
  assert.equal(dnsOf({ dnsPolicy: "Default" }), undefined);
  assert.deepEqual(
    dnsOf({
      dnsConfig: {
        nameservers: ["10.0.0.11", "1.1.1.1", "8.8.8.8"],
        searches: ["svc.corp.local", "example.com"],
        options: [{ name: "ndots", value: "1" }, { name: "edns0" }],
      },
    }),
    {
      nameServers: ["10.0.0.10", "10.0.0.11", "1.1.1.1"],
      searchDomains: "ns.svc.corp.local svc.corp.local corp.local example.com",
      options: "ndots:1 edns0",
    },
    "duplicates dropped, at most 3 nameservers, the pod's ndots replaces the cluster's",
  );
  assert.deepEqual(dnsOf({ dnsPolicy: "None", dnsConfig: { nameservers: ["1.1.1.1"] } }), {
    nameServers: ["1.1.1.1"],
  });
});

Deno.test("bad cluster DNS, kube-proxy and Log Analytics settings are each reported with their field", () => {
  const bad = parseAciConfig(aciConfig("https://management.azure.com", {
    clusterDNS: ["kube-dns"],
    clusterDomain: "Cluster Local",
    kubeProxy: { clusterCidr: "10.244.0.0" },
    logAnalytics: { workspaceId: "w" },
  }));
  assert.equal(bad.ok, false);
  const text = bad.ok ? "" : bad.errors.join("\n");
  for (
    const field of [
      "clusterDNS",
      "clusterDomain",
      "kubeProxy.clusterCidr",
      "kubeProxy.kubeconfig",
      "logAnalytics.workspaceKey",
    ]
  ) {
    assert.match(text, new RegExp(field.replace(".", "\\.")), field);
  }
  const windows = parseAciConfig(aciConfig("https://management.azure.com", {
    osType: "Windows",
    kubeProxy: { clusterCidr: "10.244.0.0/16", kubeconfig: "/k" },
  }));
  assert.match(windows.ok ? "" : windows.errors.join("\n"), /kubeProxy: .*Linux groups only/);
});
