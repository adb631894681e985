/**
 * The pod controller against the real control plane: in-process, as a real node identity
 * (`system:node:<name>`, Node authorizer + NodeRestriction), with the mock provider. Each test
 * registers its own minimal Ready Node so the scheduler can bind to it.
 * @module
 */
import assert from "node:assert/strict";
import { useCluster } from "../../../tools/cluster/harness.ts";
import {
  deployment,
  eventsIn,
  log,
  NODE_IP,
  podsIn,
  registerNode,
  runningCount,
  waitFor,
} from "./_cluster_node.ts";

Deno.test({
  name: "pods: a Deployment of 20 replicas runs, and scaled to 0 leaves nothing Terminating",
  sanitizeResources: false, // the node client's pooled HTTP connections are closed in close()
  async fn() {
    const cluster = await useCluster();
    const ns = await cluster.newNamespace("pods");
    const node = await registerNode(cluster);
    const stop = await node.startController();
    try {
      const started = Date.now();
      const made = await cluster.kubectl(["-n", ns, "apply", "-f", "-"], {
        stdin: JSON.stringify(deployment("web", node.name, 20)),
      });
      assert.equal(made.code, 0, made.stderr);
      await waitFor(
        "20 Running pods",
        60_000,
        async () => runningCount(await podsIn(cluster, ns)) === 20 ? true : undefined,
      );
      log.info("20 replicas Running after {ms} ms", { ms: Date.now() - started });
      assert.equal([...node.provider.pods.keys()].filter((k) => k.startsWith(`${ns}/`)).length, 20);
      await cluster.kubectl(["-n", ns, "scale", "deployment/web", "--replicas=0"]);
      await waitFor(
        "no pods left",
        60_000,
        async () => (await podsIn(cluster, ns)).length === 0 ? true : undefined,
      );
      assert.equal([...node.provider.pods.keys()].filter((k) => k.startsWith(`${ns}/`)).length, 0);
    } finally {
      await stop();
      await node.close();
      await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    }
  },
});

Deno.test({
  name:
    "pods: delete --grace-period=30 stops the pod in the provider at once and removes the object",
  sanitizeResources: false,
  async fn() {
    const cluster = await useCluster();
    const ns = await cluster.newNamespace("pods");
    const node = await registerNode(cluster);
    const stop = await node.startController();
    try {
      const pod = {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "solo" },
        spec: { nodeName: node.name, containers: [{ name: "main", image: "nginx" }] },
      };
      assert.equal(
        (await cluster.kubectl(["-n", ns, "create", "-f", "-"], { stdin: JSON.stringify(pod) }))
          .code,
        0,
      );
      await waitFor(
        "the pod Running",
        30_000,
        async () => runningCount(await podsIn(cluster, ns)) === 1 ? true : undefined,
      );
      const t0 = Date.now();
      const deleted = await cluster.kubectl([
        "-n",
        ns,
        "delete",
        "pod",
        "solo",
        "--grace-period=30",
        "--wait=false",
      ]);
      assert.equal(deleted.code, 0, deleted.stderr);
      await waitFor(
        "the provider to stop the pod",
        5_000,
        () => Promise.resolve(node.provider.pods.has(`${ns}/solo`) ? undefined : true),
      );
      await waitFor(
        "the object to be gone",
        10_000,
        async () => (await podsIn(cluster, ns)).length === 0 ? true : undefined,
      );
      assert.ok(
        Date.now() - t0 < 15_000,
        "removed when the containers stopped, not after the grace period",
      );
    } finally {
      await stop();
      await node.close();
      await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    }
  },
});

Deno.test({
  name: "pods: a pod using every env source gets exactly the expected environment",
  sanitizeResources: false,
  async fn() {
    const cluster = await useCluster();
    const ns = await cluster.newNamespace("pods");
    const node = await registerNode(cluster);
    const stop = await node.startController();
    try {
      const objects = [
        {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: "cfg" },
          data: { MODE: "prod", LEVEL: "3" },
        },
        {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: "creds" },
          stringData: { PASSWORD: "s3cret", "1st": "x" },
        },
        {
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "db" },
          spec: { selector: { app: "db" }, ports: [{ name: "pg", port: 5432 }] },
        },
      ];
      for (const o of objects) {
        const r = await cluster.kubectl(["-n", ns, "create", "-f", "-"], {
          stdin: JSON.stringify(o),
        });
        assert.equal(r.code, 0, r.stderr);
      }
      const svc = JSON.parse(
        (await cluster.kubectl(["-n", ns, "get", "svc", "db", "-o", "json"])).stdout,
      );
      const k8s = JSON.parse(
        (await cluster.kubectl(["-n", "default", "get", "svc", "kubernetes", "-o", "json"])).stdout,
      );
      const field = (fieldPath: string) => ({ valueFrom: { fieldRef: { fieldPath } } });
      const pod = {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "envy", labels: { app: "envy" }, annotations: { owner: "team-a" } },
        spec: {
          nodeName: node.name,
          serviceAccountName: "default",
          containers: [{
            name: "main",
            image: "nginx",
            resources: { requests: { cpu: "250m", memory: "64Mi" }, limits: { memory: "128Mi" } },
            envFrom: [{ configMapRef: { name: "cfg" }, prefix: "CM_" }, {
              secretRef: { name: "creds" },
            }],
            env: [
              { name: "PLAIN", value: "x" },
              { name: "EXPANDED", value: "$(PLAIN)-$(CM_MODE)-$$(PLAIN)-$(NOPE)" },
              { name: "FROM_CM", valueFrom: { configMapKeyRef: { name: "cfg", key: "LEVEL" } } },
              {
                name: "FROM_SECRET",
                valueFrom: { secretKeyRef: { name: "creds", key: "PASSWORD" } },
              },
              {
                name: "OPTIONAL",
                valueFrom: { configMapKeyRef: { name: "absent", key: "k", optional: true } },
              },
              { name: "NAME", ...field("metadata.name") },
              { name: "NAMESPACE", ...field("metadata.namespace") },
              { name: "UID", ...field("metadata.uid") },
              { name: "LABEL", ...field("metadata.labels['app']") },
              { name: "ANNOTATION", ...field("metadata.annotations['owner']") },
              { name: "NODE", ...field("spec.nodeName") },
              { name: "SA", ...field("spec.serviceAccountName") },
              { name: "HOST_IP", ...field("status.hostIP") },
              { name: "HOST_IPS", ...field("status.hostIPs") },
              { name: "POD_IP", ...field("status.podIP") },
              { name: "POD_IPS", ...field("status.podIPs") },
              {
                name: "CPU_REQ",
                valueFrom: { resourceFieldRef: { resource: "requests.cpu", divisor: "1m" } },
              },
              {
                name: "MEM_LIMIT",
                valueFrom: { resourceFieldRef: { resource: "limits.memory", divisor: "1Mi" } },
              },
              { name: "CPU_LIMIT", valueFrom: { resourceFieldRef: { resource: "limits.cpu" } } },
            ],
          }],
        },
      };
      const r = await cluster.kubectl(["-n", ns, "create", "-f", "-"], {
        stdin: JSON.stringify(pod),
      });
      assert.equal(r.code, 0, r.stderr);
      const record = await waitFor("the pod in the provider with its IP in env", 30_000, () => {
        const rec = node.provider.pods.get(`${ns}/envy`);
        const ip = rec?.pod.spec?.containers[0].env?.find((e) => e.name === "POD_IP")?.value;
        return Promise.resolve(rec && ip ? rec : undefined);
      });
      const [apiPod] = await podsIn(cluster, ns);
      const env = Object.fromEntries(
        record.pod.spec!.containers[0].env!.map((e) => [e.name, e.value]),
      );
      const ip = record.podIp;
      const dbIp = svc.spec.clusterIP;
      const kIp = k8s.spec.clusterIP;
      const kPort = k8s.spec.ports[0].port;
      assert.deepEqual(env, {
        CM_MODE: "prod",
        CM_LEVEL: "3",
        PASSWORD: "s3cret",
        PLAIN: "x",
        EXPANDED: "x-prod-$(PLAIN)-$(NOPE)",
        FROM_CM: "3",
        FROM_SECRET: "s3cret",
        NAME: "envy",
        NAMESPACE: ns,
        UID: apiPod.metadata!.uid,
        LABEL: "envy",
        ANNOTATION: "team-a",
        NODE: node.name,
        SA: "default",
        HOST_IP: NODE_IP,
        HOST_IPS: NODE_IP,
        POD_IP: ip,
        POD_IPS: ip,
        CPU_REQ: "250",
        MEM_LIMIT: "128",
        CPU_LIMIT: "20",
        DB_SERVICE_HOST: dbIp,
        DB_SERVICE_PORT: "5432",
        DB_SERVICE_PORT_PG: "5432",
        DB_PORT: `tcp://${dbIp}:5432`,
        DB_PORT_5432_TCP: `tcp://${dbIp}:5432`,
        DB_PORT_5432_TCP_PROTO: "tcp",
        DB_PORT_5432_TCP_PORT: "5432",
        DB_PORT_5432_TCP_ADDR: dbIp,
        KUBERNETES_SERVICE_HOST: kIp,
        KUBERNETES_SERVICE_PORT: String(kPort),
        KUBERNETES_SERVICE_PORT_HTTPS: String(kPort),
        KUBERNETES_PORT: `tcp://${kIp}:${kPort}`,
        [`KUBERNETES_PORT_${kPort}_TCP`]: `tcp://${kIp}:${kPort}`,
        [`KUBERNETES_PORT_${kPort}_TCP_PROTO`]: "tcp",
        [`KUBERNETES_PORT_${kPort}_TCP_PORT`]: String(kPort),
        [`KUBERNETES_PORT_${kPort}_TCP_ADDR`]: kIp,
      });
      const invalid = await waitFor(
        "the InvalidEnvironmentVariableNames event",
        10_000,
        async () =>
          (await eventsIn(cluster, ns)).find((e) => e.reason === "InvalidEnvironmentVariableNames"),
      );
      assert.match(invalid.message ?? "", /Keys \[1st\] from the EnvFrom secret/);
    } finally {
      await stop();
      await node.close();
      await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    }
  },
});

Deno.test({
  name:
    "pods: a missing mandatory ConfigMap gives the kubelet's event; the pod starts once it exists",
  sanitizeResources: false,
  async fn() {
    const cluster = await useCluster();
    const ns = await cluster.newNamespace("pods");
    const node = await registerNode(cluster);
    const stop = await node.startController();
    try {
      const pod = {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "needs-cfg" },
        spec: {
          nodeName: node.name,
          containers: [{
            name: "main",
            image: "nginx",
            env: [{ name: "A", valueFrom: { configMapKeyRef: { name: "late", key: "a" } } }],
          }],
        },
      };
      assert.equal(
        (await cluster.kubectl(["-n", ns, "create", "-f", "-"], { stdin: JSON.stringify(pod) }))
          .code,
        0,
      );
      const event = await waitFor(
        "the Failed event",
        20_000,
        async () => (await eventsIn(cluster, ns)).find((e) => e.reason === "Failed"),
      );
      assert.equal(event.message, 'Error: configmap "late" not found');
      assert.equal(event.involvedObject.fieldPath, "spec.containers{main}");
      const [pending] = await podsIn(cluster, ns);
      assert.equal(
        pending.status?.containerStatuses?.[0].state?.waiting?.reason,
        "CreateContainerConfigError",
      );
      const cm = {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "late" },
        data: { a: "1" },
      };
      assert.equal(
        (await cluster.kubectl(["-n", ns, "create", "-f", "-"], { stdin: JSON.stringify(cm) }))
          .code,
        0,
      );
      await waitFor(
        "the pod Running",
        30_000,
        async () => runningCount(await podsIn(cluster, ns)) === 1 ? true : undefined,
      );
      const env = node.provider.pods.get(`${ns}/needs-cfg`)?.pod.spec?.containers[0].env;
      assert.deepEqual(env?.find((e) => e.name === "A"), { name: "A", value: "1" });
    } finally {
      await stop();
      await node.close();
      await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    }
  },
});

Deno.test({
  name:
    "pods: a controller stopped mid-rollout and restarted converges with one provider instance per pod",
  sanitizeResources: false,
  async fn() {
    const cluster = await useCluster();
    const ns = await cluster.newNamespace("pods");
    const node = await registerNode(cluster);
    let stop = await node.startController();
    try {
      const made = await cluster.kubectl(["-n", ns, "apply", "-f", "-"], {
        stdin: JSON.stringify(deployment("roll", node.name, 10)),
      });
      assert.equal(made.code, 0, made.stderr);
      await waitFor(
        "some pods Running",
        30_000,
        async () => runningCount(await podsIn(cluster, ns)) >= 3 ? true : undefined,
      );
      // Roll out a new template and stop the controller in the middle of it.
      await cluster.kubectl(["-n", ns, "set", "image", "deployment/roll", "main=nginx:2"]);
      await new Promise((r) => setTimeout(r, 300));
      await stop();
      await new Promise((r) => setTimeout(r, 2_000));
      stop = await node.startController();
      const pods = await waitFor("10 Running pods of the new template", 90_000, async () => {
        const all = await podsIn(cluster, ns);
        const ok = all.length === 10 && runningCount(all) === 10 &&
          all.every((p) => p.spec?.containers[0].image === "nginx:2");
        return ok ? all : undefined;
      });
      const mine = [...node.provider.pods.entries()].filter(([k]) => k.startsWith(`${ns}/`));
      assert.equal(mine.length, 10, "no duplicates, no orphans");
      const uids = new Set(pods.map((p) => p.metadata!.uid));
      for (const [, record] of mine) {
        assert.ok(uids.has(record.pod.metadata!.uid), "every instance is a live pod");
      }
    } finally {
      await stop();
      await node.close();
      await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    }
  },
});
