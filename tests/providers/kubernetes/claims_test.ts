/** Unit tests of `persistentVolumeClaims: copy`: config, translation, and A's provisioner. */
import assert from "node:assert/strict";
import type { PersistentVolume, PersistentVolumeClaim, Pod } from "kubernetes-types/core/v1.d.ts";
import { parseKubernetesConfig } from "../../../providers/kubernetes/config.ts";
import { translatePod } from "../../../providers/kubernetes/translate/translate.ts";
import { Placement } from "../../../providers/kubernetes/placement.ts";
import {
  SELECTED_NODE,
  UpstreamProvisioner,
} from "../../../providers/kubernetes/copies/upstream_provisioner.ts";
import type { ProviderPersistentVolumesApi } from "../../../provider/mod.ts";
import { getLogger } from "../../../base/log.ts";
import { FakeClock } from "../../fakes/clock.ts";

Deno.test("config: storageClassName and upstreamProvisioner need persistentVolumeClaims: copy", () => {
  const parsed = parseKubernetesConfig({
    kubeconfig: "/b",
    namespace: "offload",
    storageClassName: "fast",
    upstreamProvisioner: "has/slash",
  });
  assert.equal(parsed.ok, false);
  const text = !parsed.ok ? parsed.errors.join("\n") : "";
  assert.match(text, /storageClassName: needs persistentVolumeClaims: copy/);
  assert.match(text, /upstreamProvisioner: must be a provisioner name usable as a CSI driver name/);
  const ok = parseKubernetesConfig({
    kubeconfig: "/b",
    namespace: "offload",
    persistentVolumeClaims: "copy",
    storageClassName: "fast",
    upstreamProvisioner: "downstream.vkubelet.io",
  });
  assert.equal(ok.ok, true);
});

Deno.test("copy: a pod's claims point at their copies in B and are listed for copying", () => {
  const parsed = parseKubernetesConfig({
    kubeconfig: "/b",
    namespace: "offload",
    persistentVolumeClaims: "copy",
  });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const pod: Pod = {
    metadata: { namespace: "team", name: "db-0", uid: "u" },
    spec: {
      containers: [{ name: "c", image: "x", volumeMounts: [{ name: "d", mountPath: "/d" }] }],
      volumes: [{ name: "d", persistentVolumeClaim: { claimName: "data-db-0", readOnly: true } }],
    },
  };
  const one = translatePod(pod, { config: parsed.config, nodeName: "vk" });
  assert.deepEqual(one.claims, ["data-db-0"]);
  assert.deepEqual(one.pod.spec?.volumes?.[0].persistentVolumeClaim, {
    claimName: "team.data-db-0",
    readOnly: true,
  });
  const same = translatePod(pod, {
    config: { ...parsed.config, namespaces: "same" },
    nodeName: "vk",
    placement: new Placement({ namespaces: "same" }, "vk"),
  });
  assert.equal(same.pod.spec?.volumes?.[0].persistentVolumeClaim?.claimName, "data-db-0");
});

/** A provisioner on a fake of our own PV interface, recording what it is asked. */
function provisioner() {
  const created: PersistentVolume[] = [];
  const deleted: string[] = [];
  const stored = new Map<string, PersistentVolume>();
  const volumes: ProviderPersistentVolumesApi = {
    get: (name) => {
      const v = stored.get(name);
      return v ? Promise.resolve(v) : Promise.reject(Object.assign(new Error("nf"), {
        name: "KubeApiError",
        status: 404,
        code: 404,
        reason: "NotFound",
      }));
    },
    create: (v) => {
      created.push(v);
      stored.set(v.metadata!.name!, v);
      return Promise.resolve(v);
    },
    delete: (name) => {
      deleted.push(name);
      return Promise.resolve({});
    },
  };
  const stop = new AbortController();
  const p = new UpstreamProvisioner({
    volumes,
    provisioner: "downstream.vkubelet.io",
    nodeName: "vk-1",
    hostname: () => "vk-1-host",
    placement: new Placement({ namespace: "offload" }, "vk-1"),
    clock: new FakeClock(),
    log: getLogger(["test"]),
    signal: stop.signal,
  });
  return { p, created, deleted, stop };
}

function claim(annotations: Record<string, string>, extra: Partial<PersistentVolumeClaim> = {}) {
  return {
    metadata: { namespace: "team", name: "data-db-0", uid: "c-1", annotations },
    spec: {
      accessModes: ["ReadWriteOnce"],
      storageClassName: "vk",
      resources: { requests: { storage: "1Gi" } },
    },
    status: { phase: "Pending" },
    ...extra,
  } as PersistentVolumeClaim;
}

Deno.test("A's provisioner binds only claims selected for its node and its provisioner, once", async () => {
  const { p, created, deleted, stop } = provisioner();
  const mine = {
    [SELECTED_NODE]: "vk-1",
    "volume.kubernetes.io/storage-provisioner": "downstream.vkubelet.io",
  };
  p.observe(claim({ ...mine, [SELECTED_NODE]: "vk-2" }));
  p.observe(claim({ ...mine, "volume.kubernetes.io/storage-provisioner": "other.example" }));
  p.observe(claim({ [SELECTED_NODE]: "vk-1" })); // the PV controller has not marked it yet
  await Promise.resolve();
  assert.equal(created.length, 0);
  p.observe(claim(mine));
  p.observe(claim(mine));
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(created.length, 1, "one volume per claim");
  const pv = created[0];
  assert.equal(pv.metadata?.name, "pvc-c-1");
  assert.deepEqual(pv.spec?.claimRef, {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    namespace: "team",
    name: "data-db-0",
    uid: "c-1",
  });
  assert.equal(pv.spec?.capacity?.storage, "1Gi");
  assert.equal(pv.spec?.storageClassName, "vk");
  assert.equal(pv.spec?.csi?.volumeHandle, "offload/team.data-db-0", "names the copy in B");
  assert.deepEqual(
    pv.spec?.nodeAffinity?.required?.nodeSelectorTerms?.[0].matchExpressions?.[0],
    { key: "kubernetes.io/hostname", operator: "In", values: ["vk-1-host"] },
  );

  // The claim goes: its volume goes (only ours, only for that claim).
  await p.release(claim(mine, { spec: { volumeName: "pvc-other" } }));
  await p.release({ ...claim(mine), spec: { volumeName: "pvc-c-1" } });
  assert.deepEqual(deleted, ["pvc-c-1"]);
  stop.abort();
});
