/**
 * The kit's downward API (provider/downward_api.ts), and one pod read two ways: an env var
 * resolved by the core and a file in a downwardAPI volume written by the process provider. The kubelet gives both the same value
 * (pkg/kubelet/kubelet_pods.go for env, pkg/volume/downwardapi/downwardapi.go for files, both on
 * pkg/fieldpath and pkg/api/v1/resource); so must vkubelet.
 */
import assert from "node:assert/strict";
import type { DownwardAPIVolumeFile, EnvVar, Pod } from "kubernetes-types/core/v1.d.ts";
import { type EnvSources, resolvePodEnv } from "../../core/pods/env.ts";
import {
  formatMap,
  goQuote,
  isInvalidInput,
  resolveResourceFieldRef,
  resolveVolumeFieldRef,
} from "../../provider/mod.ts";
import { PodPaths } from "../../providers/process/state/state.ts";
import { VolumeSet } from "../../providers/process/volumes/volumes.ts";

const allocatable = { cpu: "8", memory: "16Gi", "ephemeral-storage": "100Gi" };
const sources: EnvSources = {
  configMap: () => Promise.resolve(undefined),
  secret: () => Promise.resolve(undefined),
  services: () => [],
  allocatable: () => allocatable,
};
const addresses = { podIps: ["127.0.0.5"], hostIps: ["127.0.0.1"] };

/** Item path, what to read, and what the kubelet shows. */
const CASES: [string, Omit<DownwardAPIVolumeFile, "path">, string][] = [
  ["cpu_milli", {
    resourceFieldRef: { containerName: "main", resource: "limits.cpu", divisor: "1m" },
  }, "4001"],
  ["cpu_tens", {
    resourceFieldRef: { containerName: "main", resource: "requests.cpu", divisor: "10m" },
  }, "7"],
  ["side_cpu", {
    resourceFieldRef: { containerName: "side", resource: "limits.cpu", divisor: "1" },
  }, "1"],
  ["mem_mi", {
    resourceFieldRef: { containerName: "main", resource: "requests.memory", divisor: "1Mi" },
  }, "96"],
  [
    "mem_limit",
    { resourceFieldRef: { containerName: "main", resource: "limits.memory" } },
    String(16 * 1024 ** 3),
  ],
  [
    "annotations",
    { fieldRef: { fieldPath: "metadata.annotations" } },
    'a.example.com/note="say \\"hi\\"\\nthen\\tbell\\a and\\x7f del"\nb="plain"',
  ],
  [
    "note",
    { fieldRef: { fieldPath: "metadata.annotations['a.example.com/note']" } },
    'say "hi"\nthen\tbell\x07 and\x7f del',
  ],
  ["labels", { fieldRef: { fieldPath: "metadata.labels" } }, 'app="web"\ntier="front"'],
];

function pod(): Pod {
  const env: EnvVar[] = CASES.map(([path, item]) => ({
    name: path.toUpperCase(),
    valueFrom: item,
  }));
  return {
    metadata: {
      name: "web-0",
      namespace: "shop",
      uid: "uid-1",
      labels: { tier: "front", app: "web" },
      annotations: { b: "plain", "a.example.com/note": 'say "hi"\nthen\tbell\x07 and\x7f del' },
    },
    spec: {
      enableServiceLinks: false,
      containers: [
        {
          name: "main",
          image: "img",
          env,
          resources: { limits: { cpu: "4001m" }, requests: { cpu: "70m", memory: "100M" } },
        },
        { name: "side", image: "img", resources: { limits: { cpu: "250m" } } },
      ],
      volumes: [{
        name: "info",
        downwardAPI: { items: CASES.map(([path, item]) => ({ path, ...item })) },
      }],
    },
  };
}

Deno.test("env vars and downwardAPI volume files show the same values, the kubelet's", async () => {
  const dir = await Deno.makeTempDir({ prefix: "vk-downward-" });
  try {
    const paths = new PodPaths(dir);
    const volumes = new VolumeSet(pod(), {
      paths,
      hostPath: { enabled: false, allowedPrefixes: [] },
      tokenExpirationSeconds: 3600,
      allocatable,
      now: () => Date.now(),
    });
    await volumes.sync(pod());
    const resolved = await resolvePodEnv(pod(), sources, addresses);
    const env = new Map(resolved.pod.spec!.containers[0].env!.map((e) => [e.name, e.value]));
    const expected = Object.fromEntries(CASES.map(([path, , value]) => [path, value]));
    const files: Record<string, string> = {};
    const vars: Record<string, string | undefined> = {};
    for (const [path] of CASES) {
      files[path] = await Deno.readTextFile(`${paths.volume("info")}/${path}`);
      vars[path] = env.get(path.toUpperCase());
    }
    assert.deepEqual(vars, expected, "env vars");
    assert.deepEqual(files, expected, "downwardAPI volume files");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("label maps format like the kubelet's downward API (fieldpath.FormatMap)", () => {
  assert.equal(formatMap({ b: "2", a: 'x"y', c: "tab\there" }), 'a="x\\"y"\nb="2"\nc="tab\\there"');
  assert.equal(formatMap({}), "");
});

Deno.test("values are quoted as Go's %q quotes them", () => {
  const cases: [string, string][] = [
    ["plain", '"plain"'],
    ["back\\slash", '"back\\\\slash"'],
    ["\x00\x1b\x7f", '"\\x00\\x1b\\x7f"'],
    ["\x07\b\f\r\v", '"\\a\\b\\f\\r\\v"'],
    ["line\u2028sep\u00ad", '"line\\u2028sep\\u00ad"'],
    ["héllo wörld ✓ 🚀", '"héllo wörld ✓ 🚀"'],
  ];
  for (const [value, quoted] of cases) assert.equal(goQuote(value), quoted, JSON.stringify(value));
});

Deno.test("a downwardAPI volume takes only metadata fields, with a message that says which", () => {
  const p = pod();
  assert.equal(resolveVolumeFieldRef(p, { fieldPath: "metadata.uid" }), "uid-1");
  assert.equal(resolveVolumeFieldRef(p, { fieldPath: "metadata.labels['tier']" }), "front");
  assert.throws(
    () => resolveVolumeFieldRef(p, { fieldPath: "spec.nodeName" }),
    (err) => isInvalidInput(err) && /spec\.nodeName is not supported in volumes/.test(err.message),
  );
});

Deno.test("a resourceFieldRef naming a missing container fails as invalid input", () => {
  const ref = { containerName: "gone", resource: "limits.cpu" };
  assert.throws(
    () => resolveResourceFieldRef(pod(), ref, { allocatable }),
    (err) => isInvalidInput(err) && err.message === "container gone not found",
  );
  assert.equal(
    resolveResourceFieldRef(pod(), { resource: "limits.cpu", divisor: "1m" }, {
      container: pod().spec!.containers[1],
      allocatable,
    }),
    "250",
  );
});
