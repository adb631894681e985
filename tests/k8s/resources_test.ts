import assert from "node:assert/strict";
import type { KubeRequester, RequestOptions } from "../../k8s/request.ts";
import { createApis } from "../../k8s/resources/apis.ts";

/** Records requests and answers each with `{}`. */
function recorder(): { requester: KubeRequester; sent: RequestOptions[] } {
  const sent: RequestOptions[] = [];
  const requester = {
    request(options: RequestOptions) {
      sent.push(options);
      return Promise.resolve({});
    },
  } as KubeRequester;
  return { requester, sent };
}

Deno.test("typed helpers build the paths kubectl would use", async () => {
  const { requester, sent } = recorder();
  const kube = createApis(requester);
  await kube.pods.get("ns", "p");
  await kube.pods.list({ namespace: "ns", fieldSelector: "spec.nodeName=n" });
  await kube.pods.list();
  await kube.nodes.get("n1");
  await kube.leases.get("kube-node-lease", "n1");
  await kube.csrs.list();
  await kube.serviceAccounts.createToken("ns", "default", { spec: { audiences: ["a"] } });
  await kube.tokenReviews.create({ spec: { token: "t" } });
  assert.deepEqual(sent.map((s) => s.path), [
    "/api/v1/namespaces/ns/pods/p",
    "/api/v1/namespaces/ns/pods",
    "/api/v1/pods",
    "/api/v1/nodes/n1",
    "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1",
    "/apis/certificates.k8s.io/v1/certificatesigningrequests",
    "/api/v1/namespaces/ns/serviceaccounts/default/token",
    "/apis/authentication.k8s.io/v1/tokenreviews",
  ]);
  assert.equal(sent[1].query?.fieldSelector, "spec.nodeName=n");
  assert.deepEqual(sent[7].body, {
    apiVersion: "authentication.k8s.io/v1",
    kind: "TokenReview",
    spec: { token: "t" },
  });
});

Deno.test("each patch type is sent with its content type, status patches to /status", async () => {
  const { requester, sent } = recorder();
  const kube = createApis(requester);
  await kube.pods.patchStatus("ns", "p", { type: "strategic", body: { status: {} } });
  await kube.nodes.patchStatus("n1", { type: "merge", body: {} });
  await kube.events.patch("ns", "e", {
    type: "json",
    body: [{ op: "replace", path: "/count", value: 2 }],
  });
  await kube.configMaps.patch("ns", "c", {
    type: "apply",
    body: { data: {} },
    fieldManager: "vkubelet",
    force: true,
  });
  assert.deepEqual(sent.map((s) => [s.method, s.path, s.contentType]), [
    ["PATCH", "/api/v1/namespaces/ns/pods/p/status", "application/strategic-merge-patch+json"],
    ["PATCH", "/api/v1/nodes/n1/status", "application/merge-patch+json"],
    ["PATCH", "/api/v1/namespaces/ns/events/e", "application/json-patch+json"],
    ["PATCH", "/api/v1/namespaces/ns/configmaps/c", "application/apply-patch+yaml"],
  ]);
  assert.deepEqual(sent[3].query, { dryRun: undefined, fieldManager: "vkubelet", force: true });
  assert.throws(
    () => kube.configMaps.patch("ns", "c", { type: "apply", body: {} }),
    /needs fieldManager/,
  );
});

Deno.test("delete sends the grace period and the UID precondition", async () => {
  const { requester, sent } = recorder();
  const kube = createApis(requester);
  await kube.pods.delete("ns", "p", { gracePeriodSeconds: 0, preconditions: { uid: "u-1" } });
  assert.equal(sent[0].method, "DELETE");
  assert.deepEqual(sent[0].body, {
    apiVersion: "v1",
    kind: "DeleteOptions",
    gracePeriodSeconds: 0,
    preconditions: { uid: "u-1" },
    propagationPolicy: undefined,
    dryRun: undefined,
  });
});

Deno.test("update takes namespace and name from the object and refuses one without them", async () => {
  const { requester, sent } = recorder();
  const kube = createApis(requester);
  await kube.pods.updateStatus({ metadata: { namespace: "ns", name: "p" } });
  assert.equal(sent[0].path, "/api/v1/namespaces/ns/pods/p/status");
  assert.equal(sent[0].method, "PUT");
  assert.throws(() => kube.pods.update({ metadata: { name: "p" } }), /metadata\.namespace/);
  assert.throws(() => kube.nodes.update({ metadata: {} }), /metadata\.name/);
  assert.throws(() => kube.pods.get("ns", ""), /name is empty/);
});
