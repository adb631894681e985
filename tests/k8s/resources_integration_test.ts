/**
 * CRUD through every typed helper against the real control plane.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { isAlreadyExists, isConflict, isInvalid, isKubeNotFound } from "../../k8s/errors.ts";
import { formatMicroTime } from "../../k8s/micro_time.ts";
import { adminClient, dropNamespace, useCluster } from "./_cluster.ts";
import { tempDir } from "./_fixtures.ts";

const suffix = () => crypto.randomUUID().slice(0, 6);

Deno.test("pods: create, list by node, patch and update status, delete with UID precondition, delete all", async () => {
  const cluster = await useCluster();
  using kube = await adminClient(cluster);
  const ns = await cluster.newNamespace("k8s-pods");
  try {
    const node = `vk-test-${suffix()}`;
    const pod: Pod = {
      metadata: { name: "web", namespace: ns },
      spec: { nodeName: node, containers: [{ name: "c", image: "example/web:1" }] },
    };
    const created = await kube.pods.create(ns, pod);
    assert.ok(created.metadata?.uid);
    await kube.pods.create(ns, {
      ...pod,
      metadata: { name: "other", namespace: ns },
      spec: { ...pod.spec!, nodeName: "elsewhere" },
    });
    const onNode = await kube.pods.list({ namespace: ns, fieldSelector: `spec.nodeName=${node}` });
    assert.deepEqual(onNode.items.map((p) => p.metadata?.name), ["web"]);

    const patched = await kube.pods.patchStatus(ns, "web", {
      type: "strategic",
      body: { status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] } },
    });
    assert.equal(patched.status?.phase, "Running");
    const updated = await kube.pods.updateStatus({
      ...patched,
      status: { ...patched.status, message: "all good" },
    });
    assert.equal((await kube.pods.get(ns, "web")).status?.message, "all good");
    assert.ok(
      Number(updated.metadata?.resourceVersion) > Number(patched.metadata?.resourceVersion),
    );

    const wrongUid = await kube.pods.delete(ns, "web", {
      gracePeriodSeconds: 0,
      preconditions: { uid: "00000000-0000-0000-0000-000000000000" },
    }).catch((e) => e);
    assert.ok(isConflict(wrongUid), String(wrongUid));
    await kube.pods.delete(ns, "web", {
      gracePeriodSeconds: 0,
      preconditions: { uid: created.metadata!.uid },
    });
    assert.ok(isKubeNotFound(await kube.pods.get(ns, "web").catch((e) => e)));
    await kube.pods.deleteCollection(ns, { gracePeriodSeconds: 0 });
    assert.equal((await kube.pods.list({ namespace: ns })).items.length, 0);
  } finally {
    await dropNamespace(cluster, ns);
  }
});

Deno.test("nodes: create, patch status with conditions and capacity, delete", async () => {
  const cluster = await useCluster();
  using kube = await adminClient(cluster);
  const name = `vk-test-${suffix()}`;
  await kube.nodes.create({ metadata: { name, labels: { "type": "virtual-kubelet" } } });
  try {
    const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    const node = await kube.nodes.patchStatus(name, {
      type: "strategic",
      body: {
        status: {
          capacity: { cpu: "4", memory: "8Gi", pods: "110" },
          conditions: [{
            type: "Ready",
            status: "True",
            reason: "KubeletReady",
            message: "kubelet is posting ready status",
            lastHeartbeatTime: now,
            lastTransitionTime: now,
          }],
          daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
        },
      },
    });
    assert.equal(node.status?.capacity?.pods, "110");
    const fetched = await kube.nodes.get(name);
    assert.equal(fetched.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");
    assert.equal(fetched.status?.daemonEndpoints?.kubeletEndpoint?.Port, 10250);
    assert.ok(isAlreadyExists(await kube.nodes.create({ metadata: { name } }).catch((e) => e)));
  } finally {
    await kube.nodes.delete(name);
  }
  assert.ok(isKubeNotFound(await kube.nodes.get(name).catch((e) => e)));
});

Deno.test("leases: renewTime goes out as MicroTime, and a stale update is a conflict", async () => {
  const cluster = await useCluster();
  using kube = await adminClient(cluster);
  const ns = await cluster.newNamespace("k8s-lease");
  try {
    const lease = await kube.leases.create(ns, {
      metadata: { name: "node-a" },
      spec: {
        holderIdentity: "node-a",
        leaseDurationSeconds: 40,
        renewTime: formatMicroTime(Date.now()),
      },
    });
    assert.match(lease.spec?.renewTime ?? "", /\.\d{6}Z$/);
    const renewed = await kube.leases.update({
      ...lease,
      spec: { ...lease.spec, renewTime: formatMicroTime(Date.now() + 10_000) },
    });
    assert.ok(renewed.spec!.renewTime! > lease.spec!.renewTime!);
    const stale = await kube.leases.update({
      ...lease,
      spec: { ...lease.spec, holderIdentity: "b" },
    })
      .catch((e) => e);
    assert.ok(isConflict(stale), String(stale));
    assert.equal((await kube.leases.get(ns, "node-a")).spec?.holderIdentity, "node-a");
  } finally {
    await dropNamespace(cluster, ns);
  }
});

Deno.test("events: create, then patch count and lastTimestamp when the event repeats", async () => {
  const cluster = await useCluster();
  using kube = await adminClient(cluster);
  const ns = await cluster.newNamespace("k8s-events");
  try {
    const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    const event = await kube.events.create(ns, {
      metadata: { name: `web.${suffix()}`, namespace: ns },
      involvedObject: { kind: "Pod", namespace: ns, name: "web", apiVersion: "v1" },
      reason: "Started",
      message: "Started container c",
      type: "Normal",
      source: { component: "vkubelet", host: "vk-node" },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    });
    const patched = await kube.events.patch(ns, event.metadata!.name!, {
      type: "merge",
      body: { count: 2, lastTimestamp: now },
    });
    assert.equal(patched.count, 2);
    const listed = await kube.events.list({
      namespace: ns,
      fieldSelector: "involvedObject.name=web",
    });
    assert.equal(listed.items.length, 1);
  } finally {
    await dropNamespace(cluster, ns);
  }
});

Deno.test("configmaps, secrets and services: create, get, update, apply, delete", async () => {
  const cluster = await useCluster();
  using kube = await adminClient(cluster);
  const ns = await cluster.newNamespace("k8s-crud");
  try {
    const cm = await kube.configMaps.create(ns, { metadata: { name: "cfg" }, data: { a: "1" } });
    await kube.configMaps.update({ ...cm, data: { a: "2" } });
    const applied = await kube.configMaps.patch(ns, "cfg", {
      type: "apply",
      fieldManager: "vkubelet-test",
      force: true,
      body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cfg" }, data: { b: "3" } },
    });
    assert.deepEqual(applied.data, { a: "2", b: "3" });
    await kube.configMaps.delete(ns, "cfg");
    assert.ok(isKubeNotFound(await kube.configMaps.get(ns, "cfg").catch((e) => e)));

    await kube.secrets.create(ns, { metadata: { name: "s" }, stringData: { token: "t0p" } });
    const secret = await kube.secrets.get(ns, "s");
    assert.equal(atob(secret.data!.token), "t0p");
    await kube.secrets.patch(ns, "s", {
      type: "json",
      body: [{ op: "add", path: "/data/x", value: btoa("y") }],
    });
    assert.equal(atob((await kube.secrets.get(ns, "s")).data!.x), "y");
    await kube.secrets.delete(ns, "s");

    const svc = await kube.services.create(ns, {
      metadata: { name: "web" },
      spec: { selector: { app: "web" }, ports: [{ port: 80, targetPort: 8080 }] },
    });
    assert.ok(svc.spec?.clusterIP);
    const invalid = await kube.services.create(ns, {
      metadata: { name: "bad" },
      spec: { ports: [] },
    })
      .catch((e) => e);
    assert.ok(isInvalid(invalid), String(invalid));
    await kube.services.delete(ns, "web");
    assert.equal((await kube.services.list({ namespace: ns })).items.length, 0);
  } finally {
    await dropNamespace(cluster, ns);
  }
});

Deno.test("a service-account token passes a TokenReview, and SubjectAccessReview answers RBAC", async () => {
  const cluster = await useCluster();
  using kube = await adminClient(cluster);
  const ns = await cluster.newNamespace("k8s-review");
  try {
    const token = await kube.serviceAccounts.createToken(ns, "default", {
      spec: { audiences: [], expirationSeconds: 600 },
    });
    assert.ok(token.status?.token);
    const review = await kube.tokenReviews.create({ spec: { token: token.status!.token } });
    assert.equal(review.status?.authenticated, true);
    assert.equal(review.status?.user?.username, `system:serviceaccount:${ns}:default`);
    const bogus = await kube.tokenReviews.create({ spec: { token: "not-a-token" } });
    assert.notEqual(bogus.status?.authenticated, true);

    const ask = (user: string, groups: string[]) =>
      kube.subjectAccessReviews.create({
        spec: {
          user,
          groups,
          resourceAttributes: { namespace: ns, verb: "list", resource: "pods" },
        },
      });
    assert.equal((await ask("nobody", [])).status?.allowed, false);
    assert.equal((await ask("root", ["system:masters"])).status?.allowed, true);
  } finally {
    await dropNamespace(cluster, ns);
  }
});

Deno.test("csrs: a created CSR is approved, signed, and its certificate handed back", async () => {
  const cluster = await useCluster();
  using kube = await adminClient(cluster);
  await using dir = await tempDir();
  const name = `vk-test-${suffix()}`;
  const made = await new Deno.Command("openssl", {
    args: [
      "req",
      "-new",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      join(dir.path, "key.pem"),
      "-out",
      join(dir.path, "csr.pem"),
      "-subj",
      `/CN=${name}/O=vk-test`,
    ],
    stderr: "piped",
  }).output();
  assert.ok(made.success, new TextDecoder().decode(made.stderr));
  const request = btoa(await Deno.readTextFile(join(dir.path, "csr.pem")));
  const csr = await kube.csrs.create({
    metadata: { name },
    spec: {
      request,
      signerName: "kubernetes.io/kube-apiserver-client",
      usages: ["client auth"],
      expirationSeconds: 600,
    },
  });
  try {
    const controller = new AbortController();
    const certificate = kube.csrs.waitForCertificate(name, { signal: controller.signal });
    await kube.csrs.updateApproval({
      ...csr,
      status: {
        conditions: [{
          type: "Approved",
          status: "True",
          reason: "Test",
          message: "approved by test",
        }],
      },
    });
    const timer = setTimeout(
      () => controller.abort(new Error("no certificate within 60 s")),
      60_000,
    );
    try {
      assert.match(await certificate, /-----BEGIN CERTIFICATE-----/);
    } finally {
      clearTimeout(timer);
    }
  } finally {
    await kube.csrs.delete(name);
  }
});
