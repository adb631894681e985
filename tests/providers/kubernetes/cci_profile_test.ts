/**
 * Unit tests of `profile: cci`: pods shaped to CCI's sizes and rules, refused fields named, and
 * the namespace check.
 */
import assert from "node:assert/strict";
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import { parseKubernetesConfig } from "../../../providers/kubernetes/config.ts";
import { isInvalidInput } from "../../../provider/mod.ts";
import { translatePod } from "../../../providers/kubernetes/translate/translate.ts";
import {
  CCI_FLAVOR_ANNOTATION,
  CciNamespaceCheck,
} from "../../../providers/kubernetes/cci/cci_namespace.ts";
import type { KubeClient } from "../../../k8s/mod.ts";

function config(profile?: string) {
  const parsed = parseKubernetesConfig({
    kubeconfig: "/b.kubeconfig",
    namespace: "offload",
    ...(profile ? { profile } : {}),
  });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  return parsed.config;
}

function pod(containers: Container[], spec: Partial<Pod["spec"]> = {}): Pod {
  return {
    metadata: { namespace: "team", name: "web-1", uid: "uid-1" },
    spec: { containers, ...spec },
  };
}

function shape(input: Pod) {
  return translatePod(input, { config: config("cci"), nodeName: "vk-1" });
}

const resources = (p: Pod) =>
  [...p.spec!.containers, ...p.spec!.initContainers ?? []].map((c) => c.resources);

Deno.test("profile cci: an odd CPU without limits becomes the smallest CCI size, requests = limits", () => {
  const { pod: out, shaped } = shape(pod([{
    name: "main",
    image: "busybox",
    resources: { requests: { cpu: "300m", memory: "100Mi" } },
  }]));
  // 0.3 vCPU -> 0.5 (0.25 steps); 100Mi -> 1 GiB (whole GiB, at least 1:2 of 0.5 vCPU).
  assert.deepEqual(resources(out), [{
    requests: { cpu: "500m", memory: "1Gi" },
    limits: { cpu: "500m", memory: "1Gi" },
  }]);
  assert.equal(shaped?.length, 1);
  assert.match(shaped![0], /pod sized 0\.5 vCPU \/ 1 GiB/);
  assert.match(shaped![0], /main: cpu 300m\/none -> 500m, memory 100Mi\/none -> 1Gi/);
});

Deno.test("profile cci: memory above 1:8 of the CPU raises the CPU, not the other way", () => {
  const { pod: out } = shape(pod([{
    name: "main",
    image: "x",
    resources: { limits: { cpu: "1", memory: "10Gi" } },
  }]));
  // 1 vCPU holds at most 8 GiB; 1.25 vCPU holds 10 GiB.
  assert.deepEqual(resources(out)[0]?.limits, { cpu: "1250m", memory: "10Gi" });
});

Deno.test("profile cci: the pod's padding goes to the first container; init containers fit inside", () => {
  const { pod: out } = shape(pod(
    [
      { name: "a", image: "x", resources: { limits: { cpu: "250m", memory: "256Mi" } } },
      { name: "b", image: "x", resources: { limits: { cpu: "250m", memory: "256Mi" } } },
    ],
    {
      initContainers: [{
        name: "init",
        image: "x",
        resources: { limits: { cpu: "1", memory: "3Gi" } },
      }],
    },
  ));
  // max(sum of app = 0.5 vCPU / 512Mi, init = 1 vCPU / 3Gi) -> 1 vCPU / 3 GiB (1:3).
  assert.deepEqual(resources(out).map((r) => r?.limits), [
    { cpu: "750m", memory: "2816Mi" },
    { cpu: "250m", memory: "256Mi" },
    { cpu: "1", memory: "3Gi" },
  ]);
  for (const r of resources(out)) assert.deepEqual(r?.requests, r?.limits);
});

Deno.test("profile cci: a pod already of a CCI size is sent unchanged and reported as such", () => {
  const input = pod([{
    name: "main",
    image: "x",
    resources: { requests: { cpu: "2", memory: "4Gi" }, limits: { cpu: "2", memory: "4Gi" } },
  }]);
  const { pod: out, shaped } = shape(input);
  assert.deepEqual(resources(out), resources(input));
  assert.deepEqual(shaped, []);
});

Deno.test("profile cci: hostPath, hostNetwork, privileged and a sixth container are refused by field", () => {
  const cases: [Pod, RegExp][] = [
    [
      pod([{ name: "m", image: "x" }], {
        volumes: [{ name: "data", hostPath: { path: "/srv/data" } }],
      }),
      /spec\.volumes\[0\]\.hostPath \(volume data, path \/srv\/data\)/,
    ],
    [pod([{ name: "m", image: "x" }], { hostNetwork: true }), /spec\.hostNetwork/],
    [
      pod([{ name: "m", image: "x" }], {
        initContainers: [{ name: "i", image: "x", securityContext: { privileged: true } }],
      }),
      /spec\.initContainers\[0\]\.securityContext\.privileged \(container i\)/,
    ],
    [
      pod(Array.from({ length: 6 }, (_, i) => ({ name: `c${i}`, image: "x" }))),
      /spec\.containers has 6 containers; CCI allows at most 5/,
    ],
    [
      pod([{ name: "m", image: "x", resources: { limits: { cpu: "65" } } }]),
      /needs 65 vCPU/,
    ],
  ];
  for (const [input, message] of cases) {
    assert.throws(
      () => shape(input),
      (err: Error) => isInvalidInput(err) && message.test(err.message),
    );
  }
});

Deno.test("profile cci: a time-zone hostPath and hostPorts are dropped and reported", () => {
  const { pod: out, shaped } = shape(pod([{
    name: "main",
    image: "x",
    ports: [{ containerPort: 80, hostPort: 8080 }],
    volumeMounts: [
      { name: "tz", mountPath: "/etc/localtime", readOnly: true },
      { name: "scratch", mountPath: "/tmp/s" },
    ],
    resources: { limits: { cpu: "250m", memory: "1Gi" } },
  }], {
    volumes: [
      { name: "tz", hostPath: { path: "/etc/localtime" } },
      { name: "scratch", emptyDir: {} },
    ],
  }));
  assert.deepEqual(out.spec?.volumes, [{ name: "scratch", emptyDir: {} }]);
  assert.deepEqual(out.spec?.containers[0].volumeMounts, [{
    name: "scratch",
    mountPath: "/tmp/s",
  }]);
  assert.deepEqual(out.spec?.containers[0].ports, [{ containerPort: 80 }]);
  assert.ok(shaped?.some((s) => s.includes("dropped hostPath volume tz (/etc/localtime)")));
  assert.ok(shaped?.some((s) => s.includes("spec.containers[0].ports[0].hostPort 8080")));
});

Deno.test("without a profile the pod keeps its resources and host fields", () => {
  const input = pod([{ name: "m", image: "x", resources: { requests: { cpu: "300m" } } }], {
    volumes: [{ name: "data", hostPath: { path: "/srv/data" } }],
  });
  const { pod: out, shaped } = translatePod(input, { config: config(), nodeName: "vk-1" });
  assert.equal(shaped, undefined);
  assert.deepEqual(out.spec?.containers[0].resources, { requests: { cpu: "300m" } });
  assert.equal(out.spec?.volumes?.[0].hostPath?.path, "/srv/data");
});

Deno.test("profile accepts only cci", () => {
  const parsed = parseKubernetesConfig({ kubeconfig: "/k", namespace: "n", profile: "aci" });
  assert.equal(parsed.ok, false);
  assert.match(!parsed.ok ? parsed.errors[0] : "", /^profile: /);
});

/** B's answers to the namespace check, by path; a missing path answers 404. */
function fakeB(answers: Record<string, unknown>) {
  const asked: string[] = [];
  const client = {
    request(options: { path: string }) {
      asked.push(options.path);
      if (options.path in answers) return Promise.resolve(answers[options.path]);
      return Promise.reject(
        Object.assign(new Error("not found"), { name: "KubeApiError", code: 404 }),
      );
    },
  } as unknown as Pick<KubeClient, "request">;
  return { client, asked };
}

const NS_PATH = "/api/v1/namespaces/offload";
const NETWORKS_PATH = "/apis/networking.cci.io/v1beta1/namespaces/offload/networks";
const FLAVORED = { metadata: { annotations: { [CCI_FLAVOR_ANNOTATION]: "general-computing" } } };

Deno.test("profile cci: a namespace without the flavor annotation or a Network fails the pod with what to create", async () => {
  const noFlavor = new CciNamespaceCheck(fakeB({ [NS_PATH]: { metadata: {} } }).client, "offload");
  await assert.rejects(
    noFlavor.check({}),
    (err: Error) =>
      isInvalidInput(err) && /namespace\.kubernetes\.io\/flavor=\(none\)/.test(err.message),
  );
  const noNetwork = new CciNamespaceCheck(
    fakeB({ [NS_PATH]: FLAVORED, [NETWORKS_PATH]: { items: [] } }).client,
    "offload",
  );
  await assert.rejects(
    noNetwork.check({}),
    (err: Error) => isInvalidInput(err) && /has no Network \(networking\.cci\.io/.test(err.message),
  );
});

Deno.test("profile cci: a ready namespace is checked once", async () => {
  const b = fakeB({ [NS_PATH]: FLAVORED, [NETWORKS_PATH]: { items: [{}] } });
  const check = new CciNamespaceCheck(b.client, "offload");
  await check.check({});
  await check.check({});
  assert.deepEqual(b.asked, [NS_PATH, NETWORKS_PATH]);
});
