/**
 * Issue 24, item 6: storage through the kubernetes provider. A StatefulSet with
 * volumeClaimTemplates runs in B: A's claims (a WaitForFirstConsumer class of the provisioner
 * `downstream.vkubelet.io`) are bound by the virtual node with a volume pinned to it, each claim
 * is copied to B with B's class, and B's process node mounts the copy's hostPath volume. A pod
 * recreated on the virtual node finds its data again; a claim deleted in A takes its copy along.
 *
 * B has no dynamic provisioner: the test plays one for B's class `local-b-*` (a hostPath volume
 * in a temporary directory, pre-bound to each pending claim of that class) — scaffolding for B's
 * storage, not part of what is tested.
 */
import assert from "node:assert/strict";
import type { PersistentVolume } from "kubernetes-types/core/v1.d.ts";
import type { KubeClient } from "../../../k8s/mod.ts";
import { twoClusters } from "./_setup.ts";
import { eventually } from "../../../tools/harness/wait.ts";

const PROVISIONER = "downstream.vkubelet.io";

/** Creates a hostPath PV under `root` for every pending claim of `className` in B until aborted. */
async function provisionB(
  b: KubeClient,
  options: { className: string; root: string; made: string[]; signal: AbortSignal },
): Promise<void> {
  const { className, root, made, signal } = options;
  while (!signal.aborted) {
    const claims = await b.persistentVolumeClaims.list({ signal }).catch(() => undefined);
    for (const claim of claims?.items ?? []) {
      const uid = claim.metadata?.uid;
      const name = `${className}-${uid}`;
      if (claim.spec?.storageClassName !== className || claim.spec?.volumeName) continue;
      if (!uid || made.includes(name)) continue;
      await Deno.mkdir(`${root}/${uid}`);
      const volume: PersistentVolume = {
        metadata: { name },
        spec: {
          capacity: { storage: claim.spec?.resources?.requests?.storage ?? "1Mi" },
          accessModes: claim.spec?.accessModes,
          storageClassName: className,
          persistentVolumeReclaimPolicy: "Retain",
          hostPath: { path: `${root}/${uid}`, type: "Directory" },
          claimRef: {
            namespace: claim.metadata?.namespace,
            name: claim.metadata?.name,
            uid,
          },
        },
      };
      await b.persistentVolumes.create(volume, { signal });
      made.push(name);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Two clusters with storage classes on both sides and B's test provisioner running. */
async function storageClusters(providerConfig: Record<string, unknown> = {}) {
  const suffix = crypto.randomUUID().slice(0, 6);
  const classA = `vk-${suffix}`, classB = `local-b-${suffix}`;
  const root = await Deno.makeTempDir({ prefix: "vk-kprov-pv-" });
  const env = await twoClusters({
    providerConfig: {
      persistentVolumeClaims: "copy",
      storageClassName: classB,
      upstreamProvisioner: PROVISIONER,
      ...providerConfig,
    },
    nodesB: [{ providerConfig: { hostPath: { allowedPrefixes: [root] } } }],
    rulesB: [{
      apiGroups: [""],
      resources: ["persistentvolumeclaims"],
      verbs: ["get", "list", "watch", "create", "delete"],
    }],
    rulesA: [
      { apiGroups: [""], resources: ["persistentvolumeclaims"], verbs: ["get", "list", "watch"] },
      { apiGroups: [""], resources: ["persistentvolumes"], verbs: ["get", "create", "delete"] },
    ],
  });
  const stop = new AbortController();
  const madeB: string[] = [];
  const provisioner = provisionB(env.adminB, {
    className: classB,
    root,
    made: madeB,
    signal: stop.signal,
  });
  await env.b.kubectl(["apply", "-f", "-"], {
    stdin: JSON.stringify({
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: { name: classB },
      provisioner: "kubernetes.io/no-provisioner",
      volumeBindingMode: "Immediate",
    }),
  });
  await env.a.kubectl(["apply", "-f", "-"], {
    stdin: JSON.stringify({
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: { name: classA },
      provisioner: PROVISIONER,
      volumeBindingMode: "WaitForFirstConsumer",
    }),
  });
  return {
    env,
    classA,
    classB,
    /** A StatefulSet `web` of `replicas` pods on the virtual node, each writing its name. */
    statefulSet: (replicas: number) =>
      JSON.stringify({
        apiVersion: "apps/v1",
        kind: "StatefulSet",
        metadata: { name: "web", namespace: env.namespaceA },
        spec: {
          replicas,
          podManagementPolicy: "Parallel",
          serviceName: "web",
          selector: { matchLabels: { app: "web" } },
          template: {
            metadata: { labels: { app: "web" } },
            spec: {
              ...env.placement,
              terminationGracePeriodSeconds: 0,
              containers: [{
                name: "main",
                image: "busybox",
                env: [{
                  name: "POD_NAME",
                  valueFrom: { fieldRef: { fieldPath: "metadata.name" } },
                }],
                command: ["sh", "-c", 'echo "$POD_NAME" >> /data/written; exec sleep 3600'],
                volumeMounts: [{ name: "data", mountPath: "/data" }],
              }],
            },
          },
          volumeClaimTemplates: [{
            metadata: { name: "data" },
            spec: {
              accessModes: ["ReadWriteOnce"],
              storageClassName: classA,
              resources: { requests: { storage: "10Mi" } },
            },
          }],
        },
      }),
    async close() {
      stop.abort();
      await provisioner.catch(() => {});
      const same = providerConfig.namespaces === "same";
      await env.a.kubectl(["delete", "namespace", env.namespaceA, "--wait=false"]);
      await env.close();
      await env.b.kubectl(["delete", "namespace", env.namespaceB, "--wait=false"]);
      if (same) {
        await env.b.kubectl([
          "delete",
          "namespace",
          env.namespaceA,
          "--wait=false",
          "--ignore-not-found",
        ]);
      }
      await env.a.kubectl(["delete", "storageclass", classA, "--ignore-not-found"]);
      await env.b.kubectl(["delete", "storageclass", classB, "--ignore-not-found"]);
      if (madeB.length > 0) {
        await env.b.kubectl(["delete", "pv", ...madeB, "--wait=false", "--ignore-not-found"]);
      }
      await env.a.kubectl([
        "delete",
        "pv",
        "-l",
        `vkubelet.io/virtual-node=${env.virtualNode.nodeName}`,
        "--wait=false",
      ]);
      await Deno.remove(root, { recursive: true }).catch(() => {});
    },
  };
}

/** Resolves true once `get` fails (the object is gone). */
function gone(get: () => Promise<unknown>): () => Promise<boolean> {
  return async () => {
    try {
      await get();
      return false;
    } catch {
      return true;
    }
  };
}

Deno.test("kubernetes provider: a 3-replica StatefulSet with volumeClaimTemplates runs in B and keeps its data", async () => {
  const s = await storageClusters();
  const { env, classB } = s;
  const ns = env.namespaceA;
  const kubectlA = env.a.kubectlIn(ns);
  try {
    await kubectlA(["apply", "-f", "-"], s.statefulSet(3));
    const pods = ["web-0", "web-1", "web-2"];
    await eventually("all 3 replicas Running in A", async () => {
      const list = await env.adminA.pods.list({ namespace: ns });
      const running = list.items.filter((p) => p.status?.phase === "Running");
      return running.length === 3;
    }, 180_000);
    for (const pod of pods) {
      assert.equal(
        (await kubectlA(["exec", pod, "--", "cat", "/data/written"])).trim(),
        pod,
        `${pod} wrote into its own volume`,
      );
    }
    // A's claims: bound to this node's volumes, pinned to the virtual node.
    const claimA = await env.adminA.persistentVolumeClaims.get(ns, "data-web-1");
    const volumeA = await env.adminA.persistentVolumes.get(claimA.spec!.volumeName!);
    assert.equal(volumeA.spec?.csi?.driver, PROVISIONER);
    assert.deepEqual(
      volumeA.spec?.nodeAffinity?.required?.nodeSelectorTerms?.[0].matchExpressions?.[0].values,
      [env.virtualNode.nodeName],
    );
    // B's copies: B's class, bound to the volumes B's storage made.
    const copy = await env.adminB.persistentVolumeClaims.get(env.namespaceB, `${ns}.data-web-1`);
    assert.equal(copy.spec?.storageClassName, classB);
    assert.equal(copy.status?.phase, "Bound");
    assert.equal(copy.metadata?.labels?.["vkubelet.io/upstream-uid"], claimA.metadata?.uid);

    // A pod deleted in A comes back on the virtual node and finds its data in B.
    const before = await env.adminA.pods.get(ns, "web-0");
    await kubectlA(["delete", "pod", "web-0", "--wait=false"]);
    await eventually("web-0 recreated and Running", async () => {
      const pod = await env.adminA.pods.get(ns, "web-0");
      return pod.metadata?.uid !== before.metadata?.uid && pod.status?.phase === "Running" &&
        pod.spec?.nodeName === env.virtualNode.nodeName;
    }, 120_000);
    const written = await eventually("web-0's second line", async () => {
      const out = (await kubectlA(["exec", "web-0", "--", "cat", "/data/written"])).trim();
      return out.split("\n").length === 2 && out;
    }, 30_000);
    assert.equal(written, "web-0\nweb-0", "the first incarnation's file is still there");

    // A claim deleted in A (after its pod) takes its copy in B and its volume in A along.
    await kubectlA(["scale", "statefulset", "web", "--replicas=1"]);
    await eventually("web-1 and web-2 gone from A", async () => {
      const list = await env.adminA.pods.list({ namespace: ns });
      return list.items.length === 1;
    }, 60_000);
    await kubectlA(["delete", "pvc", "data-web-1", "--wait=false"]);
    await eventually(
      "the copy of data-web-1 gone from B",
      gone(() => env.adminB.persistentVolumeClaims.get(env.namespaceB, `${ns}.data-web-1`)),
      60_000,
    );
    await eventually(
      "A's volume of data-web-1 gone",
      gone(() => env.adminA.persistentVolumes.get(volumeA.metadata!.name!)),
      60_000,
    );
    const kept = await env.adminB.persistentVolumeClaims.get(env.namespaceB, `${ns}.data-web-2`);
    assert.equal(kept.status?.phase, "Bound", "a claim still in A keeps its copy");
  } finally {
    await s.close();
  }
});

Deno.test("kubernetes provider: namespaces: same keeps B's namespace while it holds a claim copy", async () => {
  const s = await storageClusters({ namespaces: "same" });
  const { env } = s;
  const ns = env.namespaceA;
  const kubectlA = env.a.kubectlIn(ns);
  try {
    await kubectlA(["apply", "-f", "-"], s.statefulSet(1));
    await eventually("web-0 Running in A", async () => {
      const pod = await env.adminA.pods.get(ns, "web-0");
      return pod.status?.phase === "Running";
    }, 120_000);
    assert.equal(
      (await env.adminB.persistentVolumeClaims.get(ns, "data-web-0")).status?.phase,
      "Bound",
    );

    // No pod left in the namespace: B's namespace (and the copy, and the data) stay.
    await kubectlA(["scale", "statefulset", "web", "--replicas=0"]);
    await eventually("web-0 gone from B", gone(() => env.adminB.pods.get(ns, "web-0")), 60_000);
    await new Promise((r) => setTimeout(r, 2000)); // the namespace would go within this
    assert.equal((await env.adminB.namespaces.get(ns)).metadata?.deletionTimestamp, undefined);
    await kubectlA(["scale", "statefulset", "web", "--replicas=1"]);
    const written = await eventually("web-0 back, with its first line", async () => {
      const pod = await env.adminA.pods.get(ns, "web-0");
      if (pod.status?.phase !== "Running") return false;
      const out = (await kubectlA(["exec", "web-0", "--", "cat", "/data/written"])).trim();
      return out.split("\n").length === 2 && out;
    }, 120_000);
    assert.equal(written, "web-0\nweb-0");

    // The StatefulSet and its claim deleted in A: the copy goes, then B's namespace.
    await kubectlA(["delete", "statefulset", "web"]);
    await eventually("web-0 gone from B", gone(() => env.adminB.pods.get(ns, "web-0")), 60_000);
    await kubectlA(["delete", "pvc", "data-web-0", "--wait=false"]);
    await eventually(
      "B's namespace gone with the last copy",
      gone(() => env.adminB.namespaces.get(ns)),
      90_000,
    );
  } finally {
    await s.close();
  }
});
