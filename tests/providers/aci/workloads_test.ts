/**
 * What a pod asks of ACI beyond its containers, as the request reaches the emulator through
 * Prism with Azure's 2023-05-01 specification (422 on a request that breaks it): probes, Azure
 * Files (inline, and the CSI driver's attributes) with the key from the pod's Secret, gitRepo,
 * the confidential SKU and CCE policy, Spot priority, and Log Analytics from the config; what
 * ACI's API cannot express is refused naming the field.
 */
import assert from "node:assert/strict";
import type { Secret } from "kubernetes-types/core/v1.d.ts";
import { KubeApiError } from "../../../k8s/errors.ts";
import { isInvalidInput, type ProviderKubeClient } from "../../../provider/mod.ts";
import { aciPod, startProviderOnAci, until } from "../../../tools/harness/aci/env.ts";

const kube = {
  secrets: {
    get: (_ns: string, name: string) =>
      name === "files"
        ? Promise.resolve({
          metadata: { name },
          data: { azurestorageaccountname: btoa("acct"), azurestorageaccountkey: btoa("k3y==") },
        } as Secret)
        : Promise.reject(new KubeApiError(404, { method: "GET", path: `secrets/${name}` })),
  },
} as unknown as ProviderKubeClient;

type Env = Awaited<ReturnType<typeof startProviderOnAci>>;
const running = (env: Env, name: string) =>
  until(`${name} Running`, async () => {
    const p = await env.provider.getPod("team-a", name, {});
    return p?.status?.phase === "Running" ? p : undefined;
  });
const propsOf = (env: Env, pod: string) =>
  [...env.emu.groups.values()].find((g) => g.body.tags["vkubelet-pod"] === pod)!.body.properties;

Deno.test("liveness and readiness probes reach ACI as its exec and httpGet probes", async () => {
  const env = await startProviderOnAci();
  try {
    await env.provider.createPod(
      aciPod("probed", {
        containers: [{
          name: "main",
          image: "nginx",
          ports: [{ name: "http", containerPort: 8080 }],
          livenessProbe: {
            exec: { command: ["cat", "/tmp/healthy"] },
            initialDelaySeconds: 5,
            periodSeconds: 10,
            failureThreshold: 3,
          },
          readinessProbe: {
            httpGet: {
              port: "http",
              path: "/ready",
              scheme: "HTTPS",
              httpHeaders: [{ name: "X-Probe", value: "1" }],
            },
            timeoutSeconds: 2,
            successThreshold: 1,
          },
        }],
      }),
      {},
    );
    const pod = await running(env, "probed");
    const main = propsOf(env, "probed").containers[0].properties;
    assert.deepEqual(main.livenessProbe, {
      exec: { command: ["cat", "/tmp/healthy"] },
      initialDelaySeconds: 5,
      periodSeconds: 10,
      failureThreshold: 3,
    });
    assert.deepEqual(main.readinessProbe, {
      httpGet: {
        port: 8080,
        path: "/ready",
        scheme: "https",
        httpHeaders: [{ name: "X-Probe", value: "1" }],
      },
      timeoutSeconds: 2,
      successThreshold: 1,
    });
    // ACI's instance view has no readiness: Ready follows the running containers (README).
    assert.equal(pod.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");
    assert.deepEqual(env.violations(), []);
  } finally {
    await env.close();
  }
});

Deno.test("probes ACI cannot express fail the pod naming the field and what to use", async () => {
  const env = await startProviderOnAci();
  try {
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ["tcp", { livenessProbe: { tcpSocket: { port: 80 } } }, /livenessProbe\.tcpSocket.*exec/],
      ["grpc", { readinessProbe: { grpc: { port: 80 } } }, /readinessProbe\.grpc/],
      ["startup", { startupProbe: { exec: { command: ["true"] } } }, /startupProbe.*initialDelay/],
      ["named", { livenessProbe: { httpGet: { port: "web" } } }, /no port named web/],
    ];
    for (const [name, probe, message] of cases) {
      await assert.rejects(
        env.provider.createPod(
          aciPod(name, { containers: [{ name: "main", image: "nginx", ...probe }] }),
          {},
        ),
        (err: Error) => isInvalidInput(err) && message.test(err.message),
        name,
      );
    }
    assert.equal(env.emu.groups.size, 0);
  } finally {
    await env.close();
  }
});

Deno.test("Azure Files (inline and CSI) with the Secret's account and key, and gitRepo, reach ACI", async () => {
  const env = await startProviderOnAci({}, kube);
  try {
    await env.provider.createPod(
      aciPod("files", {
        containers: [{
          name: "main",
          image: "busybox",
          volumeMounts: [
            { name: "share", mountPath: "/share" },
            { name: "csi", mountPath: "/csi", readOnly: true },
            { name: "src", mountPath: "/src" },
          ],
        }],
        volumes: [
          { name: "share", azureFile: { secretName: "files", shareName: "data" } },
          {
            name: "csi",
            csi: {
              driver: "file.csi.azure.com",
              readOnly: true,
              volumeAttributes: { shareName: "logs", secretName: "files" },
            },
          },
          {
            name: "src",
            gitRepo: { repository: "https://git.example/app.git", revision: "abc123" },
          },
        ],
      }),
      {},
    );
    await running(env, "files");
    assert.deepEqual(propsOf(env, "files").volumes, [
      {
        name: "share",
        azureFile: { shareName: "data", storageAccountName: "acct", storageAccountKey: "k3y==" },
      },
      {
        name: "csi",
        azureFile: {
          shareName: "logs",
          storageAccountName: "acct",
          storageAccountKey: "k3y==",
          readOnly: true,
        },
      },
      { name: "src", gitRepo: { repository: "https://git.example/app.git", revision: "abc123" } },
    ]);
    assert.deepEqual(env.violations(), []);
    const refused: [string, Record<string, unknown>, RegExp][] = [
      ["disk", { csi: { driver: "disk.csi.azure.com" } }, /Azure Files only.*disk\.csi/],
      ["nosecret", { azureFile: { secretName: "gone", shareName: "d" } }, /gone does not exist/],
      ["pvc", { persistentVolumeClaim: { claimName: "c" } }, /persistentVolumeClaim.*azureFile/],
      [
        "nfs-share",
        {
          csi: {
            driver: "file.csi.azure.com",
            volumeAttributes: { shareName: "d", secretName: "files", protocol: "nfs" },
          },
        },
        /volumeAttributes\.protocol: ACI's azureFile volume takes/,
      ],
    ];
    for (const [name, volume, message] of refused) {
      await assert.rejects(
        env.provider.createPod(aciPod(name, { volumes: [{ name: "v", ...volume }] }), {}),
        (err: Error) => isInvalidInput(err) && message.test(err.message),
        name,
      );
    }
  } finally {
    await env.close();
  }
});

Deno.test("confidential SKU with a CCE policy, Spot priority and Log Analytics reach ACI", async () => {
  const env = await startProviderOnAci({
    logAnalytics: { workspaceId: "ws-1", workspaceKey: "wk", logType: "ContainerInstanceLogs" },
  });
  try {
    const pod = aciPod("cc");
    pod.metadata!.annotations = {
      "virtual-kubelet.io/confidential-compute-cce-policy": btoa("package policy"),
      "vkubelet.io/aci-priority": "spot",
    };
    await env.provider.createPod(pod, {});
    await running(env, "cc");
    const p = propsOf(env, "cc");
    assert.equal(p.sku, "Confidential");
    assert.deepEqual(p.confidentialComputeProperties, { ccePolicy: btoa("package policy") });
    assert.equal(p.priority, "Spot");
    assert.deepEqual(p.diagnostics, {
      logAnalytics: { workspaceId: "ws-1", workspaceKey: "wk", logType: "ContainerInstanceLogs" },
    });
    assert.deepEqual(env.violations(), []);
    const bad = aciPod("bad-sku");
    bad.metadata!.annotations = { "virtual-kubelet.io/container-sku": "Premium" };
    await assert.rejects(
      env.provider.createPod(bad, {}),
      (err: Error) =>
        isInvalidInput(err) && /container-sku.*Standard, Dedicated, Confidential/.test(err.message),
    );
  } finally {
    await env.close();
  }
});
