/** Unit tests of the pod translation, names, status mapping, capacity and exec status. */
import assert from "node:assert/strict";
import type { Node, Pod } from "kubernetes-types/core/v1.d.ts";
import { parseKubernetesConfig } from "../../../providers/kubernetes/config.ts";
import { isInvalidInput } from "../../../provider/mod.ts";
import { escapedEnv, translatePod } from "../../../providers/kubernetes/translate/translate.ts";
import { downstreamName, upstreamOf } from "../../../providers/kubernetes/names.ts";
import { goneStatus, upstreamStatus } from "../../../providers/kubernetes/status/status.ts";
import { freeCapacity, toQuantities } from "../../../providers/kubernetes/node/capacity.ts";
import { exitCodeOf } from "../../../providers/kubernetes/streaming/streaming.ts";

function config(extra: Record<string, unknown> = {}) {
  const parsed = parseKubernetesConfig({
    kubeconfig: "/b.kubeconfig",
    namespace: "offload",
    ...extra,
  });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  return parsed.config;
}

function upstreamPod(): Pod {
  return {
    metadata: {
      namespace: "team",
      name: "web-1",
      uid: "uid-1",
      labels: { app: "web" },
      annotations: { "kubectl.kubernetes.io/last-applied-configuration": "{}", keep: "yes" },
      ownerReferences: [{ apiVersion: "apps/v1", kind: "ReplicaSet", name: "web", uid: "rs" }],
    },
    spec: {
      nodeName: "vk-1",
      nodeSelector: { "kubernetes.io/hostname": "vk-1" },
      affinity: {
        nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [] } },
      },
      tolerations: [
        { key: "virtual-kubelet.io/provider", operator: "Exists" },
        {
          key: "node.kubernetes.io/not-ready",
          operator: "Exists",
          effect: "NoExecute",
          tolerationSeconds: 300,
        },
        { key: "dedicated", operator: "Exists" },
      ],
      serviceAccountName: "builder",
      priorityClassName: "high",
      priority: 1000,
      imagePullSecrets: [{ name: "registry" }],
      containers: [{
        name: "main",
        image: "busybox",
        env: [{ name: "PASSWORD", value: "resolved" }],
        volumeMounts: [
          { name: "config", mountPath: "/etc/config" },
          {
            name: "kube-api-access-abcde",
            mountPath: "/var/run/secrets/kubernetes.io/serviceaccount",
          },
        ],
      }],
      volumes: [
        { name: "config", configMap: { name: "settings" } },
        { name: "creds", secret: { secretName: "creds" } },
        {
          name: "kube-api-access-abcde",
          projected: {
            sources: [
              { serviceAccountToken: { path: "token", expirationSeconds: 3607 } },
              {
                configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }] },
              },
              {
                downwardAPI: {
                  items: [{ path: "namespace", fieldRef: { fieldPath: "metadata.namespace" } }],
                },
              },
            ],
          },
        },
      ],
    },
  };
}

Deno.test("translation drops what was meant for the virtual node and marks the uid", () => {
  const { pod, dependencies } = translatePod(upstreamPod(), {
    config: config({
      nodeSelector: { pool: "spare" },
      tolerations: [{ key: "spare", operator: "Exists" }],
    }),
    nodeName: "vk-1",
  });
  assert.equal(pod.metadata?.name, "team.web-1");
  assert.equal(pod.metadata?.namespace, "offload");
  assert.equal(pod.metadata?.labels?.["vkubelet.io/upstream-uid"], "uid-1");
  assert.equal(pod.metadata?.labels?.app, "web");
  assert.equal(pod.metadata?.ownerReferences, undefined);
  assert.equal(pod.metadata?.annotations?.keep, "yes");
  assert.equal(
    pod.metadata?.annotations?.["kubectl.kubernetes.io/last-applied-configuration"],
    undefined,
  );
  assert.deepEqual(upstreamOf(pod.metadata), { namespace: "team", name: "web-1", uid: "uid-1" });
  assert.equal(pod.spec?.nodeName, undefined);
  assert.deepEqual(pod.spec?.nodeSelector, { pool: "spare" });
  assert.equal(pod.spec?.affinity?.nodeAffinity, undefined);
  assert.deepEqual(pod.spec?.tolerations?.map((t) => t.key), ["dedicated", "spare"]);
  assert.equal(pod.spec?.priorityClassName, undefined);
  assert.equal(pod.spec?.priority, undefined);
  assert.equal(pod.spec?.serviceAccountName, undefined);
  assert.equal(pod.spec?.enableServiceLinks, false);
  assert.equal(pod.spec?.hostname, "web-1");
  assert.deepEqual(pod.spec?.imagePullSecrets, [{ name: "team.registry" }]);
  // B's own service-account volume replaces A's.
  assert.deepEqual(pod.spec?.volumes?.map((v) => v.name), ["config", "creds"]);
  assert.deepEqual(pod.spec?.containers[0].volumeMounts?.map((m) => m.name), ["config"]);
  assert.equal(pod.spec?.volumes?.[0].configMap?.name, "team.settings");
  assert.equal(pod.spec?.volumes?.[1].secret?.secretName, "team.creds");
  assert.deepEqual(pod.spec?.containers[0].env, [{ name: "PASSWORD", value: "resolved" }]);
  assert.deepEqual(
    dependencies.map((d) => `${d.kind}/${d.namespace}/${d.name}`).sort(),
    ["configMaps/team/settings", "secrets/team/creds", "secrets/team/registry"],
  );
});

Deno.test("upstream token mode mounts A's token, CA and namespace from copies in B", () => {
  const { pod, dependencies, tokenSecret } = translatePod(upstreamPod(), {
    config: config({ serviceAccountToken: "upstream" }),
    nodeName: "vk-1",
  });
  assert.equal(pod.spec?.automountServiceAccountToken, false);
  const access = pod.spec?.volumes?.find((v) => v.name === "kube-api-access-abcde");
  assert.deepEqual(access?.projected?.sources, [
    { secret: { name: "team.web-1.token", items: [{ key: "token-0", path: "token" }] } },
    { configMap: { name: "team.kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }] } },
    { secret: { name: "team.web-1.token", items: [{ key: "namespace", path: "namespace" }] } },
  ]);
  assert.deepEqual(tokenSecret, {
    name: "team.web-1.token",
    needs: [{ key: "token-0", audience: undefined, expirationSeconds: 3607 }, { key: "namespace" }],
  });
  assert.ok(dependencies.some((d) => d.name === "kube-root-ca.crt"));
});

Deno.test("a PVC without a mapping is refused with the config field to set", () => {
  const pod = upstreamPod();
  pod.spec!.volumes = [{ name: "data", persistentVolumeClaim: { claimName: "data" } }];
  pod.spec!.containers[0].volumeMounts = [];
  assert.throws(
    () => translatePod(pod, { config: config(), nodeName: "vk-1" }),
    (err) => isInvalidInput(err) && /persistentVolumeClaims\["team\/data"\]/.test(err.message),
  );
  const mapped = translatePod(pod, {
    config: config({ persistentVolumeClaims: { "team/data": "data-in-b" } }),
    nodeName: "vk-1",
  });
  assert.equal(mapped.pod.spec?.volumes?.[0].persistentVolumeClaim?.claimName, "data-in-b");
});

Deno.test("config problems name their fields", () => {
  const parsed = parseKubernetesConfig({
    namespace: "Bad_NS",
    tokenExpirationSeconds: 10,
    extra: 1,
  });
  assert.equal(parsed.ok, false);
  const text = !parsed.ok ? parsed.errors.join("\n") : "";
  assert.match(text, /kubeconfig: is required/);
  assert.match(text, /namespace: "Bad_NS" is not a namespace name/);
  assert.match(text, /tokenExpirationSeconds: must be at least 600/);
  assert.match(text, /\(top level\).*extra/);
  assert.equal(parseKubernetesConfig(undefined).ok, false);
});

Deno.test("downstream names are unique, reversible and bounded", () => {
  assert.equal(downstreamName("a-b", "c"), "a-b.c");
  assert.notEqual(downstreamName("a", "b-c"), downstreamName("a-b", "c"));
  const long = downstreamName("ns", "x".repeat(300));
  assert.ok(long.length <= 253);
  assert.notEqual(long, downstreamName("ns", "x".repeat(299) + "y"));
});

Deno.test("status from B keeps phase, IPs and containers; host IP is the virtual node's", () => {
  const status = upstreamStatus({
    status: {
      phase: "Running",
      podIP: "10.1.2.3",
      podIPs: [{ ip: "10.1.2.3" }],
      hostIP: "192.0.2.9",
      containerStatuses: [{
        name: "main",
        ready: true,
        restartCount: 1,
        image: "busybox",
        imageID: "",
        state: { running: { startedAt: "2026-01-01T00:00:00Z" } },
      }],
    },
  }, "127.0.0.1");
  assert.equal(status.phase, "Running");
  assert.equal(status.podIP, "10.1.2.3");
  assert.equal(status.hostIP, "127.0.0.1");
  assert.equal(status.containerStatuses?.[0].restartCount, 1);
  const gone = goneStatus(status, {
    deleting: false,
    reason: "DownstreamPodDeleted",
    message: "m",
    nowIso: "2026-01-01T00:01:00Z",
  });
  assert.equal(gone.phase, "Failed");
  assert.equal(gone.containerStatuses?.[0].state?.terminated?.reason, "DownstreamPodDeleted");
  assert.equal(
    goneStatus(status, { deleting: true, reason: "Terminated", message: "m", nowIso: "x" }).phase,
    "Succeeded",
  );
});

Deno.test("capacity is B's usable allocatable minus B's own pods, not ours", () => {
  const node = (name: string, ready: boolean): Node => ({
    metadata: { name },
    status: {
      allocatable: { cpu: "4", memory: "8Gi", pods: "110" },
      conditions: [{ type: "Ready", status: ready ? "True" : "False" }],
    },
  });
  const pod = (nodeName: string, cpu: string, ours: boolean): Pod => ({
    metadata: { labels: ours ? { "vkubelet.io/virtual-node": "vk-1" } : {} },
    spec: {
      nodeName,
      containers: [{ name: "c", resources: { requests: { cpu, memory: "1Gi" } } }],
    },
    status: { phase: "Running" },
  });
  const free = freeCapacity(
    [node("b1", true), node("b2", false)],
    [pod("b1", "500m", false), pod("b1", "1", true), pod("b2", "1", false)],
    (p) => p.metadata?.labels?.["vkubelet.io/virtual-node"] !== "vk-1",
  );
  assert.deepEqual(toQuantities(free), { cpu: "3500m", memory: String(7 * 2 ** 30), pods: "109" });
});

Deno.test("the exit code comes from the v4 error stream", () => {
  assert.equal(exitCodeOf(""), 0);
  assert.equal(exitCodeOf('{"status":"Success"}'), 0);
  assert.equal(
    exitCodeOf(
      '{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}',
    ),
    3,
  );
  assert.throws(
    () => exitCodeOf('{"status":"Failure","message":"container not found"}'),
    /container not found/,
  );
});

Deno.test("env for B: $ escaped against B's second expansion, $(NAME) of a deferred fieldRef kept", () => {
  const ip = { valueFrom: { fieldRef: { fieldPath: "status.podIP" } } };
  assert.deepEqual(
    escapedEnv([
      { name: "PRICE", value: "$(PLAIN) costs $5 $$" },
      { name: "POD_IP", ...ip },
      { name: "LISTEN", value: "$(POD_IP):80 $(PRICE)" },
    ]),
    [
      { name: "PRICE", value: "$$(PLAIN) costs $$5 $$$$" },
      { name: "POD_IP", ...ip },
      { name: "LISTEN", value: "$(POD_IP):80 $$(PRICE)" },
    ],
  );
});

Deno.test("the downstream-node-selector and downstream-affinity annotations apply in B", () => {
  const up = upstreamPod();
  const nodeAffinity = {
    requiredDuringSchedulingIgnoredDuringExecution: {
      nodeSelectorTerms: [{ matchExpressions: [{ key: "zone", operator: "In", values: ["z1"] }] }],
    },
  };
  up.metadata!.annotations = {
    "vkubelet.io/downstream-node-selector": '{"gpu":"a100","pool":"mine"}',
    "vkubelet.io/downstream-affinity": JSON.stringify({ nodeAffinity }),
  };
  const { pod } = translatePod(up, {
    config: config({ nodeSelector: { pool: "spare" } }),
    nodeName: "vk-1",
  });
  assert.deepEqual(pod.spec?.nodeSelector, { gpu: "a100", pool: "spare" }, "the config's wins");
  assert.deepEqual(pod.spec?.affinity?.nodeAffinity, nodeAffinity);
  up.metadata!.annotations = { "vkubelet.io/downstream-node-selector": '{"gpu":1}' };
  assert.throws(
    () => translatePod(up, { config: config(), nodeName: "vk-1" }),
    /annotation vkubelet.io\/downstream-node-selector: expected a JSON object such as/,
  );
});

Deno.test("upstream mode with upstreamApiServer: the kubernetes Service variables name A's apiserver", () => {
  const up = upstreamPod();
  up.spec!.containers[0].env = [
    { name: "KUBERNETES_SERVICE_HOST", value: "10.96.0.1" },
    { name: "KUBERNETES_PORT_443_TCP_ADDR", value: "10.96.0.1" },
    { name: "MINE", value: "x" },
  ];
  const { pod } = translatePod(up, {
    config: config({
      serviceAccountToken: "upstream",
      upstreamApiServer: "https://[fd00::1]:6443",
    }),
    nodeName: "vk-1",
  });
  const env = Object.fromEntries(pod.spec!.containers[0].env!.map((e) => [e.name, e.value]));
  assert.deepEqual(env, {
    MINE: "x",
    KUBERNETES_SERVICE_HOST: "fd00::1",
    KUBERNETES_SERVICE_PORT: "6443",
    KUBERNETES_SERVICE_PORT_HTTPS: "6443",
    KUBERNETES_PORT: "tcp://[fd00::1]:6443",
    KUBERNETES_PORT_6443_TCP: "tcp://[fd00::1]:6443",
    KUBERNETES_PORT_6443_TCP_PROTO: "tcp",
    KUBERNETES_PORT_6443_TCP_PORT: "6443",
    KUBERNETES_PORT_6443_TCP_ADDR: "fd00::1",
  });
  assert.equal(
    parseKubernetesConfig({ kubeconfig: "k", namespace: "n", upstreamApiServer: "http://a" }).ok,
    false,
  );
});
