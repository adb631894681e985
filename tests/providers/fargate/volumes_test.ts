/**
 * ConfigMap, Secret, downwardAPI and projected volumes on Fargate: their files go into the pod's
 * Secrets Manager secret and a set-up container writes them into bind volumes before the other
 * containers start, reading each as an ECS `secrets` reference. Against moto, with every request
 * recorded: no Secret value (in clear or base64) is in any RegisterTaskDefinition request; a pod
 * naming a Secret that exists only in another namespace gets nothing of it. What a file written
 * once cannot carry is refused naming the volume.
 */
import assert from "node:assert/strict";
import { DescribeTaskDefinitionCommand } from "@aws-sdk/client-ecs";
import { GetSecretValueCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import type { ConfigMap, Pod, Secret } from "kubernetes-types/core/v1.d.ts";
import { KubeApiError } from "../../../k8s/errors.ts";
import { isTransient, type ProviderKubeClient } from "../../../provider/mod.ts";
import { FargateBackend } from "../../../providers/fargate/backend.ts";
import { createAwsClients } from "../../../providers/fargate/client/aws.ts";
import { PodSecrets } from "../../../providers/fargate/client/pod_secrets.ts";
import { EcsTasks } from "../../../providers/fargate/client/tasks.ts";
import { parseFargateConfig } from "../../../providers/fargate/config.ts";
import { FILES_CONTAINER } from "../../../providers/fargate/request/files.ts";
import { taskDefinitionFor } from "../../../providers/fargate/request/task_definition.ts";
import { FakeClock } from "../../fakes/clock.ts";
import { config } from "./_fake_ecs.ts";
import { MOTO_ENV, startMoto } from "./_moto.ts";

const b64 = (text: string) => btoa(text);
const SECRET_A = "tenant-a-password-7f3c";
const SECRET_B = "tenant-b-password-19e2";

/** The API server's objects, by namespace/name; reads of any other answer 404. */
function fakeKube(objects: Record<string, ConfigMap | Secret>) {
  const reads: string[] = [];
  const api = (kind: string) => ({
    get(ns: string, name: string) {
      reads.push(`${kind} ${ns}/${name}`);
      const found = objects[`${kind}/${ns}/${name}`];
      return found
        ? Promise.resolve(found)
        : Promise.reject(new KubeApiError(404, { method: "GET", path: `/${ns}/${name}` }));
    },
  });
  const kube = { configMaps: api("configmap"), secrets: api("secret") };
  return { kube: kube as unknown as ProviderKubeClient, reads };
}

const OBJECTS = {
  "secret/a/db": { data: { password: b64(SECRET_A) } },
  "secret/b/db": { data: { password: b64(SECRET_B) } },
  "configmap/b/app": { data: { "app.conf": "mode=prod\n" } },
};

function volumePod(namespace: string): Pod {
  return {
    metadata: { namespace, name: "web", uid: `uid-${namespace}-web`, labels: { app: "web" } },
    spec: {
      restartPolicy: "Always",
      initContainers: [{
        name: "check",
        image: "busybox",
        command: ["test", "-f", "/db/password"],
      }],
      containers: [{
        name: "main",
        image: "busybox",
        volumeMounts: [
          { name: "db", mountPath: "/db" },
          { name: "conf", mountPath: "/etc/app", readOnly: false },
          { name: "info", mountPath: "/info" },
        ],
      }],
      volumes: [
        { name: "db", secret: { secretName: "db", defaultMode: 0o400 } },
        {
          name: "conf",
          projected: { sources: [{ configMap: { name: "app" } }] },
        },
        {
          name: "info",
          downwardAPI: { items: [{ path: "labels", fieldRef: { fieldPath: "metadata.labels" } }] },
        },
      ],
    },
  };
}

Deno.test("what a file written once cannot carry is refused, naming the volume", () => {
  const token = volumePod("b");
  token.spec!.volumes![1] = {
    name: "conf",
    projected: { sources: [{ serviceAccountToken: { path: "t" } }] },
  };
  assert.throws(
    () => taskDefinitionFor(token, config, "n1"),
    /spec\.volumes\[1\]\.projected\.sources\[0\]\.serviceAccountToken: volume conf: a token/,
  );
  const resource = volumePod("b");
  resource.spec!.volumes![2] = {
    name: "info",
    downwardAPI: { items: [{ path: "cpu", resourceFieldRef: { resource: "limits.cpu" } }] },
  };
  assert.throws(
    () => taskDefinitionFor(resource, config, "n1"),
    /downwardAPI\.items\[0\]\.resourceFieldRef: volume info:/,
  );
  const nfs = volumePod("b");
  nfs.spec!.volumes![0] = { name: "db", nfs: { server: "127.0.0.1", path: "/" } };
  assert.throws(() => taskDefinitionFor(nfs, config, "n1"), /spec\.volumes\[0\]\.nfs: volume db:/);
});

Deno.test("volume files through moto: in the pod's secret only, never in the task definition", async () => {
  const moto = await startMoto({ record: true });
  for (const [k, v] of Object.entries(MOTO_ENV)) Deno.env.set(k, v);
  const parsed = parseFargateConfig({
    region: moto.region,
    endpoint: moto.endpoint,
    cluster: moto.cluster,
    subnets: [moto.subnet],
    securityGroups: [moto.securityGroup],
    executionRoleArn: "arn:aws:iam::123456789012:role/exec",
  });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const aws = createAwsClients(parsed.config);
  const { kube, reads } = fakeKube(OBJECTS);
  const stop = new AbortController();
  const backend = new FargateBackend({
    ecs: new EcsTasks(aws, parsed.config),
    secrets: new PodSecrets(aws.secrets),
    config: parsed.config,
    nodeName: "n1",
    clock: new FakeClock(),
    event: () => {},
    kube,
    signal: stop.signal,
  });
  const sm = new SecretsManagerClient({
    region: moto.region,
    endpoint: moto.endpoint,
    credentials: { accessKeyId: "testing", secretAccessKey: "testing" },
  });
  try {
    const run = await backend.make(volumePod("b"));
    assert.ok(run?.handle?.taskArn, "the task runs");
    const def = (await moto.ecs.send(
      new DescribeTaskDefinitionCommand({ taskDefinition: run.handle.taskDefinitionArn }),
    )).taskDefinition!;
    const [files, check, main] = def.containerDefinitions!;
    assert.equal(files.name, FILES_CONTAINER);
    assert.equal(files.essential, false);
    assert.equal(files.secrets?.length, 3, "one secret reference a file");
    assert.match(
      files.secrets![0].valueFrom!,
      /:secret:vkubelet\/b\/web\/uid-b-web.*:vkubelet_files\/0::$/,
    );
    assert.match(files.command![0], /base64 -d > '\/vkubelet\/0\/password'\nchmod 400/);
    assert.deepEqual(check.dependsOn, [{ containerName: FILES_CONTAINER, condition: "SUCCESS" }]);
    assert.deepEqual(main.dependsOn, [{ containerName: "check", condition: "SUCCESS" }]);
    assert.ok(main.mountPoints!.every((m) => m.readOnly), "file volumes are mounted read-only");
    assert.deepEqual(def.volumes!.map((v) => v.name), ["db", "conf", "info"]);

    const value = JSON.parse(
      (await sm.send(new GetSecretValueCommand({ SecretId: "vkubelet/b/web/uid-b-web" })))
        .SecretString!,
    );
    assert.equal(atob(value["vkubelet_files/0"]), SECRET_B, "the file is in the pod's secret");
    assert.equal(atob(value["vkubelet_files/1"]), "mode=prod\n");
    assert.equal(atob(value["vkubelet_files/2"]), 'app="web"');

    // A pod in namespace c names the Secret "db", which only a and b have.
    await assert.rejects(backend.make(volumePod("c")), (err: Error) => {
      assert.ok(isTransient(err), "it waits for its own namespace's Secret, as the kubelet does");
      assert.match(err.message, /Secret c\/db not found; create it in the pod's namespace/);
      return true;
    });
    assert.ok(
      reads.every((r) => / (b|c)\//.test(r)),
      `reads only in the pods' namespaces: ${reads}`,
    );

    const recorded = await moto.recorded();
    const registers = recorded.filter((r) => r.target.endsWith(".RegisterTaskDefinition"));
    assert.equal(registers.length, 1);
    for (const request of recorded) {
      for (const value of [SECRET_A, b64(SECRET_A)]) {
        assert.ok(!request.body.includes(value), `${request.target} carries namespace a's Secret`);
      }
      if (!request.target.endsWith(".RegisterTaskDefinition")) continue;
      for (const value of [SECRET_B, b64(SECRET_B), JSON.stringify(b64(SECRET_B))]) {
        assert.ok(!request.body.includes(value), "a Secret's value in RegisterTaskDefinition");
      }
    }
    assert.ok(
      recorded.some((r) => r.target.endsWith(".CreateSecret") && r.body.includes(b64(SECRET_B))),
      "the value went to Secrets Manager",
    );
  } finally {
    stop.abort();
    for (const k of Object.keys(MOTO_ENV)) Deno.env.delete(k);
    sm.destroy();
    for (const client of Object.values(aws)) client.destroy();
    await moto.stop();
  }
});
