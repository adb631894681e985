import assert from "node:assert/strict";
import type { ConfigMap, Container, Pod, Secret, Service } from "kubernetes-types/core/v1.d.ts";
import { type EnvSources, isEnvResolutionError, resolvePodEnv } from "../../../core/pods/env.ts";
import { expandVars } from "../../../core/pods/expansion.ts";
import { parseQuantity, quantityMilliValue, quantityValue } from "../../../k8s/quantity.ts";

const b64 = (s: string) => btoa(s);

const configMaps: Record<string, ConfigMap> = {
  app: {
    metadata: { name: "app" },
    data: { MODE: "prod", LEVEL: "3", "bad key": "x", "1st": "y" },
  },
};
const secrets: Record<string, Secret> = {
  creds: {
    metadata: { name: "creds" },
    data: { PASSWORD: b64("s3cret"), "user.name": b64("ann") },
  },
};
const services: Service[] = [
  {
    metadata: { name: "kubernetes", namespace: "default" },
    spec: { clusterIP: "10.0.0.1", ports: [{ name: "https", port: 443, protocol: "TCP" }] },
  },
  {
    metadata: { name: "redis-main", namespace: "shop" },
    spec: {
      clusterIP: "10.0.0.7",
      ports: [{ name: "db", port: 6379 }, { name: "metrics", port: 9121, protocol: "UDP" }],
    },
  },
  {
    metadata: { name: "headless", namespace: "shop" },
    spec: { clusterIP: "None", ports: [{ port: 80 }] },
  },
  {
    metadata: { name: "other", namespace: "elsewhere" },
    spec: { clusterIP: "10.0.0.9", ports: [{ port: 80 }] },
  },
];

const sources: EnvSources = {
  configMap: (_ns, name) => Promise.resolve(configMaps[name]),
  secret: (_ns, name) => Promise.resolve(secrets[name]),
  services: () => services,
  allocatable: () => ({ cpu: "8", memory: "16Gi", "ephemeral-storage": "100Gi", pods: "110" }),
};
const addresses = { podIps: ["10.1.0.5", "fd00::5"], hostIps: ["192.168.1.2", "fd00::2"] };

function podWith(container: Partial<Container>, extra: Partial<Pod["spec"]> = {}): Pod {
  return {
    metadata: {
      name: "web-0",
      namespace: "shop",
      uid: "uid-1",
      labels: { app: "web", tier: "front" },
      annotations: { "example.com/owner": 'team "a"\n' },
    },
    spec: {
      nodeName: "vk-1",
      serviceAccountName: "web-sa",
      enableServiceLinks: false,
      containers: [{ name: "main", image: "img", ...container }],
      ...extra,
    },
  };
}

async function envOf(pod: Pod) {
  const { pod: out, events } = await resolvePodEnv(pod, sources, addresses);
  const env = Object.fromEntries(out.spec!.containers[0].env!.map((e) => [e.name, e.value]));
  return { env, events, container: out.spec!.containers[0] };
}

const SINGLE_VALUES: [string, Container["env"], Record<string, string>][] = [
  ["a plain value", [{ name: "A", value: "x" }], { A: "x" }],
  ["an empty value", [{ name: "A", value: "" }], { A: "" }],
  ["a reference to an earlier var", [{ name: "A", value: "x" }, { name: "B", value: "$(A)-y" }], {
    A: "x",
    B: "x-y",
  }],
  ["a reference to a later var stays", [{ name: "B", value: "$(A)" }, { name: "A", value: "x" }], {
    B: "$(A)",
    A: "x",
  }],
  ["an undefined reference stays", [{ name: "A", value: "$(NOPE) ok" }], { A: "$(NOPE) ok" }],
  ["$$ escapes", [{ name: "A", value: "x" }, { name: "B", value: "$$(A) $$$(A)" }], {
    A: "x",
    B: "$(A) $x",
  }],
  ["a reference to a service link", [{ name: "A", value: "$(KUBERNETES_SERVICE_HOST)" }], {
    A: "10.0.0.1",
  }],
  ["a reference to an envFrom var", [{ name: "A", value: "$(MODE)!" }], { A: "prod!" }],
  ["configMapKeyRef", [{
    name: "A",
    valueFrom: { configMapKeyRef: { name: "app", key: "LEVEL" } },
  }], {
    A: "3",
  }],
  ["secretKeyRef, decoded", [{
    name: "A",
    valueFrom: { secretKeyRef: { name: "creds", key: "PASSWORD" } },
  }], {
    A: "s3cret",
  }],
  ["optional missing ConfigMap: no var", [{
    name: "A",
    valueFrom: { configMapKeyRef: { name: "gone", key: "k", optional: true } },
  }], {}],
  ["optional missing key: no var", [{
    name: "A",
    valueFrom: { secretKeyRef: { name: "creds", key: "nope", optional: true } },
  }], {}],
  ...([
    ["metadata.name", "web-0"],
    ["metadata.namespace", "shop"],
    ["metadata.uid", "uid-1"],
    ["metadata.labels['tier']", "front"],
    ["metadata.labels['missing']", ""],
    ["metadata.annotations['example.com/owner']", 'team "a"\n'],
    ["metadata.labels", 'app="web"\ntier="front"'],
    ["metadata.annotations", 'example.com/owner="team \\"a\\"\\n"'],
    ["spec.nodeName", "vk-1"],
    ["spec.host", "vk-1"],
    ["spec.serviceAccountName", "web-sa"],
    ["status.hostIP", "192.168.1.2"],
    ["status.hostIPs", "192.168.1.2,fd00::2"],
    ["status.podIP", "10.1.0.5"],
    ["status.podIPs", "10.1.0.5,fd00::5"],
  ] as const).map(([path, value]) =>
    [
      `fieldRef ${path}`,
      [{ name: "F", valueFrom: { fieldRef: { fieldPath: path } } }],
      { F: value },
    ] as [string, Container["env"], Record<string, string>]
  ),
];

for (const [what, env, expected] of SINGLE_VALUES) {
  Deno.test(`env: ${what}`, async () => {
    const { env: got } = await envOf(podWith({
      env,
      envFrom: what.includes("envFrom") ? [{ configMapRef: { name: "app" } }] : undefined,
    }));
    for (const name of ["MODE", "LEVEL"]) delete got[name];
    for (const key of Object.keys(got)) if (key.startsWith("KUBERNETES_")) delete got[key];
    assert.deepEqual(got, expected);
  });
}

const RESOURCES: [string, string, string | undefined, string][] = [
  ["requests.cpu", "250m", undefined, "1"],
  ["requests.cpu", "250m", "1m", "250"],
  ["limits.cpu", "1500m", "1", "2"],
  ["limits.memory", "1Gi", "1Mi", "1024"],
  ["requests.memory", "100M", undefined, "100000000"],
  ["limits.ephemeral-storage", "1Gi", "1Gi", "1"],
  ["requests.ephemeral-storage", "", undefined, "0"],
  // Unset limits default to the node's allocatable.
  ["limits.memory", "", "1Gi", "16"],
  ["limits.cpu", "", "1m", "8000"],
];

for (const [resource, amount, divisor, expected] of RESOURCES) {
  Deno.test(`env: resourceFieldRef ${resource} of ${amount || "unset"} / ${divisor ?? "1"} is ${expected}`, async () => {
    const [kind, name] = resource.split(".");
    const resources = amount ? { [kind]: { [name]: amount } } : {};
    const { env } = await envOf(podWith({
      resources,
      env: [{ name: "R", valueFrom: { resourceFieldRef: { resource, divisor } } }],
    }));
    assert.equal(env.R, expected);
  });
}

Deno.test("env: resourceFieldRef may name another container", async () => {
  const pod = podWith({
    env: [{
      name: "R",
      valueFrom: {
        resourceFieldRef: { containerName: "side", resource: "requests.memory", divisor: "1Mi" },
      },
    }],
  });
  pod.spec!.containers.push({ name: "side", resources: { requests: { memory: "64Mi" } } });
  assert.equal((await envOf(pod)).env.R, "64");
});

Deno.test("env: envFrom with prefix, invalid names skipped with an event, env overrides envFrom", async () => {
  const { env, events, container } = await envOf(podWith({
    envFrom: [
      { configMapRef: { name: "app" }, prefix: "CM_" },
      { secretRef: { name: "creds" } },
      { configMapRef: { name: "absent", optional: true } },
    ],
    env: [{ name: "CM_MODE", value: "dev" }],
  }));
  assert.deepEqual(env, {
    CM_MODE: "dev",
    CM_LEVEL: "3",
    CM_1st: "y",
    PASSWORD: "s3cret",
    "user.name": "ann",
    KUBERNETES_SERVICE_HOST: "10.0.0.1",
    KUBERNETES_SERVICE_PORT: "443",
    KUBERNETES_SERVICE_PORT_HTTPS: "443",
    KUBERNETES_PORT: "tcp://10.0.0.1:443",
    KUBERNETES_PORT_443_TCP: "tcp://10.0.0.1:443",
    KUBERNETES_PORT_443_TCP_PROTO: "tcp",
    KUBERNETES_PORT_443_TCP_PORT: "443",
    KUBERNETES_PORT_443_TCP_ADDR: "10.0.0.1",
  });
  assert.equal(container.envFrom, undefined, "envFrom is resolved away");
  const invalid = events.find((e) => e.reason === "InvalidEnvironmentVariableNames");
  assert.equal(
    invalid?.message,
    "Keys [CM_bad key] from the EnvFrom configMap shop/app were skipped since they are " +
      "considered invalid environment variable names.",
  );
  assert.equal(invalid?.fieldPath, "spec.containers{main}");
  assert.ok(events.some((e) => e.reason === "OptionalConfigMapNotFound"));
});

Deno.test("env: service links for the namespace when enableServiceLinks, kubernetes always", async () => {
  const on = (await envOf(podWith({}, { enableServiceLinks: true }))).env;
  assert.equal(on.REDIS_MAIN_SERVICE_HOST, "10.0.0.7");
  assert.equal(on.REDIS_MAIN_SERVICE_PORT, "6379");
  assert.equal(on.REDIS_MAIN_SERVICE_PORT_DB, "6379");
  assert.equal(on.REDIS_MAIN_SERVICE_PORT_METRICS, "9121");
  assert.equal(on.REDIS_MAIN_PORT, "tcp://10.0.0.7:6379");
  assert.equal(on.REDIS_MAIN_PORT_9121_UDP, "udp://10.0.0.7:9121");
  assert.equal(on.REDIS_MAIN_PORT_9121_UDP_PROTO, "udp");
  assert.equal(on.REDIS_MAIN_PORT_9121_UDP_PORT, "9121");
  assert.equal(on.REDIS_MAIN_PORT_9121_UDP_ADDR, "10.0.0.7");
  assert.equal(on.HEADLESS_SERVICE_HOST, undefined, "headless services give no links");
  assert.equal(on.OTHER_SERVICE_HOST, undefined, "other namespaces give no links");
  assert.equal(on.KUBERNETES_SERVICE_HOST, "10.0.0.1");
  const off = (await envOf(podWith({}, { enableServiceLinks: false }))).env;
  assert.equal(off.REDIS_MAIN_SERVICE_HOST, undefined);
  assert.equal(off.KUBERNETES_SERVICE_HOST, "10.0.0.1");
  const unset = (await envOf(podWith({}, { enableServiceLinks: undefined }))).env;
  assert.equal(unset.REDIS_MAIN_SERVICE_HOST, "10.0.0.7", "the API default is true");
});

Deno.test("env: a declared var wins over a service link of the same name", async () => {
  const { env } = await envOf(
    podWith({ env: [{ name: "KUBERNETES_SERVICE_HOST", value: "mine" }] }),
  );
  assert.equal(env.KUBERNETES_SERVICE_HOST, "mine");
});

const FAILURES: [string, Container["env"], Container["envFrom"], string][] = [
  [
    "a missing mandatory ConfigMap",
    [{
      name: "A",
      valueFrom: { configMapKeyRef: { name: "gone", key: "k" } },
    }],
    undefined,
    'configmap "gone" not found',
  ],
  [
    "a missing mandatory ConfigMap key",
    [{
      name: "A",
      valueFrom: { configMapKeyRef: { name: "app", key: "k" } },
    }],
    undefined,
    "couldn't find key k in ConfigMap shop/app",
  ],
  [
    "a missing mandatory Secret",
    [{
      name: "A",
      valueFrom: { secretKeyRef: { name: "gone", key: "k" } },
    }],
    undefined,
    'secret "gone" not found',
  ],
  [
    "a missing mandatory Secret key",
    [{
      name: "A",
      valueFrom: { secretKeyRef: { name: "creds", key: "k" } },
    }],
    undefined,
    "couldn't find key k in Secret shop/creds",
  ],
  [
    "a missing mandatory envFrom ConfigMap",
    undefined,
    [{ configMapRef: { name: "gone" } }],
    'configmap "gone" not found',
  ],
  [
    "a missing mandatory envFrom Secret",
    undefined,
    [{ secretRef: { name: "gone" } }],
    'secret "gone" not found',
  ],
  [
    "an unsupported fieldRef",
    [{ name: "A", valueFrom: { fieldRef: { fieldPath: "status.phase" } } }],
    undefined,
    "unsupported fieldPath: status.phase",
  ],
  [
    "an unknown fieldRef",
    [{ name: "A", valueFrom: { fieldRef: { fieldPath: "spec.nope" } } }],
    undefined,
    "field label not supported: spec.nope",
  ],
  [
    "an unknown resource",
    [{ name: "A", valueFrom: { resourceFieldRef: { resource: "limits.gpu" } } }],
    undefined,
    "unsupported container resource : limits.gpu",
  ],
];

for (const [what, env, envFrom, message] of FAILURES) {
  Deno.test(`env: ${what} fails with the kubelet's message`, async () => {
    const err = await resolvePodEnv(podWith({ env, envFrom }), sources, addresses).then(
      () => undefined,
      (e) => e,
    );
    assert.ok(isEnvResolutionError(err), `expected an EnvResolutionError, got ${err}`);
    assert.equal(err.message, message);
    assert.equal(err.container, "main");
    assert.equal(err.fieldPath, "spec.containers{main}");
  });
}

Deno.test("env: init and ephemeral containers are resolved too, the input pod is untouched", async () => {
  const pod = podWith({ env: [{ name: "A", value: "1" }] });
  pod.spec!.initContainers = [{
    name: "init",
    env: [{ name: "N", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } }],
  }];
  pod.spec!.ephemeralContainers = [{
    name: "debug",
    env: [{ name: "E", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } }],
  }];
  pod.spec!.tolerations = [{ key: "virtual-kubelet.io/provider", operator: "Exists" }];
  const { pod: out } = await resolvePodEnv(pod, sources, addresses);
  assert.deepEqual(out.spec!.initContainers![0].env!.find((e) => e.name === "N"), {
    name: "N",
    value: "web-0",
  });
  assert.deepEqual(out.spec!.ephemeralContainers![0].env!.find((e) => e.name === "E"), {
    name: "E",
    value: "10.1.0.5",
  });
  assert.equal(pod.spec!.initContainers[0].env![0].valueFrom?.fieldRef?.fieldPath, "metadata.name");
  assert.deepEqual(pod.spec!.containers[0].env, [{ name: "A", value: "1" }]);
  // What resolution does not change is shared with the input, not copied: the provider keeps
  // this pod for the pod's life beside the informer's.
  assert.equal(out.metadata, pod.metadata);
  assert.equal(out.spec!.tolerations, pod.spec!.tolerations);
  assert.notEqual(out.spec!.containers[0], pod.spec!.containers[0]);
});

const EXPANSIONS: [string, string][] = [
  ["$(VAR)", "value"],
  ["$(VAR)$(VAR)", "valuevalue"],
  ["$(UNKNOWN)", "$(UNKNOWN)"],
  ["$$(VAR)", "$(VAR)"],
  ["$$$(VAR)", "$value"],
  ["$$$$(VAR)", "$$(VAR)"],
  ["$VAR", "$VAR"],
  ["$(VAR", "$(VAR"],
  ["$(", "$("],
  ["$", "$"],
  ["x$", "x$"],
  ["$()", "$()"],
  ["$(EMPTY)!", "!"],
  ["a $é b", "a $é b"],
  ["$😀(VAR)", "$😀(VAR)"],
  ["($(VAR))", "(value)"],
  ["$(VAR$(VAR))", "$(VAR$(VAR))"],
];

for (const [input, expected] of EXPANSIONS) {
  Deno.test(`expansion: ${JSON.stringify(input)} -> ${JSON.stringify(expected)}`, () => {
    const vars: Record<string, string> = { VAR: "value", EMPTY: "" };
    assert.equal(expandVars(input, (name) => vars[name]), expected);
  });
}

Deno.test("quantities are read exactly and rounded up", () => {
  const cases: [string, bigint, bigint][] = [
    ["100m", 1n, 100n],
    ["1.5", 2n, 1500n],
    ["1Ki", 1024n, 1024000n],
    ["1.5Gi", 1610612736n, 1610612736000n],
    ["2e3", 2000n, 2000000n],
    ["1E", 10n ** 18n, 10n ** 21n],
    ["0.1m", 1n, 1n],
    ["128974848", 128974848n, 128974848000n],
    ["129e6", 129000000n, 129000000000n],
  ];
  for (const [text, value, milli] of cases) {
    const q = parseQuantity(text);
    assert.equal(quantityValue(q), value, text);
    assert.equal(quantityMilliValue(q), milli, text);
  }
  assert.throws(() => parseQuantity("1.2.3"), RangeError);
  assert.throws(() => parseQuantity("abc"), RangeError);
});

Deno.test("env: fieldRefs the provider defers stay fieldRefs, and $(NAME) of them unexpanded", async () => {
  const ip = { valueFrom: { fieldRef: { fieldPath: "status.podIP" } } };
  const { pod } = await resolvePodEnv(
    podWith({
      env: [
        { name: "POD_IP", ...ip },
        { name: "LISTEN", value: "$(POD_IP):80" },
        { name: "NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
        { name: "AGAIN", value: "$(NAME)" },
      ],
    }),
    sources,
    addresses,
    { deferredFieldPaths: ["status.podIP"] },
  );
  assert.deepEqual(pod.spec!.containers[0].env!.slice(0, 4), [
    { name: "POD_IP", ...ip },
    { name: "LISTEN", value: "$(POD_IP):80" },
    { name: "NAME", value: "web-0" },
    { name: "AGAIN", value: "web-0" },
  ]);
});

Deno.test("a provider that asks gets Secret-sourced vars marked with their Secret and key", async () => {
  const pod = podWith({
    envFrom: [{ secretRef: { name: "creds" }, prefix: "DB_" }, { configMapRef: { name: "app" } }],
    env: [
      { name: "TOKEN", valueFrom: { secretKeyRef: { name: "creds", key: "PASSWORD" } } },
      { name: "MODE", value: "test" },
      { name: "DB_PASSWORD", value: "overridden" },
      { name: "URL", value: "https://x:$(TOKEN)@h" },
    ],
  });
  const marked = await resolvePodEnv(pod, sources, addresses, { secretEnvRefs: true });
  const env = marked.pod.spec!.containers[0].env!.filter((e) => !e.name.startsWith("KUBERNETES"));
  assert.deepEqual(env, [
    { name: "DB_PASSWORD", value: "overridden" },
    {
      name: "DB_user.name",
      value: "ann",
      valueFrom: { secretKeyRef: { name: "creds", key: "user.name" } },
    },
    { name: "MODE", value: "test" },
    { name: "LEVEL", value: "3" },
    {
      name: "TOKEN",
      value: "s3cret",
      valueFrom: { secretKeyRef: { name: "creds", key: "PASSWORD" } },
    },
    { name: "URL", value: "https://x:s3cret@h" },
  ]);
  // Other providers get plain values, as before.
  const plain = await resolvePodEnv(pod, sources, addresses);
  assert.ok(plain.pod.spec!.containers[0].env!.every((e) => e.valueFrom === undefined));
});
