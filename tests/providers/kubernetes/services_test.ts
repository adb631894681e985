import assert from "node:assert/strict";
import { isServiceLinkOf, serviceCopy } from "../../../providers/kubernetes/copies/services.ts";

Deno.test("a Service copy for B keeps name, selector and ports; B gives the ClusterIP", () => {
  const copy = serviceCopy({
    metadata: { name: "db", namespace: "shop", labels: { tier: "data" } },
    spec: {
      type: "NodePort",
      clusterIP: "10.96.0.7",
      selector: { app: "db" },
      ports: [{ name: "pg", port: 5432, targetPort: 5432, nodePort: 30007 }],
    },
  }, "vk-1");
  assert.deepEqual(copy.spec, {
    type: "ClusterIP",
    selector: { app: "db" },
    ports: [{ name: "pg", port: 5432, targetPort: 5432 }],
    sessionAffinity: undefined,
    publishNotReadyAddresses: undefined,
  });
  assert.equal(copy.metadata?.labels?.tier, "data");
  assert.equal(copy.metadata?.labels?.["vkubelet.io/role"], "service");
  const headless = serviceCopy({ metadata: { name: "h" }, spec: { clusterIP: "None" } }, "vk-1");
  assert.equal(headless.spec?.clusterIP, "None");
});

Deno.test("the service-link variables of A's Services are told apart from the pod's own", () => {
  const isLink = isServiceLinkOf(["db", "web-api"]);
  for (
    const name of [
      "DB_SERVICE_HOST",
      "DB_SERVICE_PORT",
      "DB_SERVICE_PORT_PG",
      "DB_PORT",
      "DB_PORT_5432_TCP",
      "DB_PORT_5432_TCP_ADDR",
      "WEB_API_SERVICE_HOST",
    ]
  ) assert.ok(isLink(name), name);
  for (const name of ["DB_PASSWORD", "DBX_SERVICE_HOST", "KUBERNETES_SERVICE_HOST"]) {
    assert.ok(!isLink(name), name);
  }
  assert.equal(isServiceLinkOf([])("DB_PORT"), false);
});
