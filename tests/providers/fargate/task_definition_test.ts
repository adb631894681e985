/**
 * The pod → task definition mapping on the provider's own functions, for what moto does not
 * model: Fargate's CPU/memory combinations (moto accepts any size), the fields Fargate refuses
 * (moto would register them), the automatic token volume, probes, and the grace period.
 */
import assert from "node:assert/strict";
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import { isInvalidInput } from "../../../provider/mod.ts";
import { type FargateConfig, parseFargateConfig } from "../../../providers/fargate/config.ts";
import { taskSize } from "../../../providers/fargate/request/sizing.ts";
import { taskDefinitionFor } from "../../../providers/fargate/request/task_definition.ts";

const parsed = parseFargateConfig({
  region: "eu-west-1",
  subnets: ["subnet-0abc"],
  executionRoleArn: "arn:aws:iam::123456789012:role/exec",
});
if (!parsed.ok) throw new Error(parsed.errors.join("; "));
const config: FargateConfig = parsed.config;

function pod(spec: Partial<Pod["spec"]> = {}, containers: Partial<Container>[] = [{}]): Pod {
  return {
    metadata: { namespace: "team-a", name: "web.1", uid: "u-1" },
    spec: {
      ...spec,
      containers: containers.map((c, i) => ({ name: `c${i}`, image: "busybox", ...c })),
    },
  };
}

const sized = (...resources: Array<Record<string, string>>) =>
  taskSize(pod({}, resources.map((requests) => ({ resources: { requests } }))));

Deno.test("task size: requests are rounded up to the next valid Fargate combination", () => {
  const cases: Array<[Array<Record<string, string>>, string]> = [
    [[{}], "256/512"],
    [[{ cpu: "250m", memory: "512Mi" }], "256/512"],
    [[{ cpu: "300m", memory: "600Mi" }], "512/1024"],
    [[{ cpu: "100m", memory: "3Gi" }], "512/3072"],
    [[{ cpu: "1", memory: "1Gi" }], "1024/2048"],
    [[{ cpu: "2", memory: "100Mi" }], "2048/4096"],
    [[{ cpu: "4", memory: "30Gi" }], "4096/30720"],
    [[{ cpu: "4", memory: "31Gi" }], "8192/32768"],
    [[{ cpu: "5" }], "8192/16384"],
    [[{ cpu: "8", memory: "61Gi" }], "16384/65536"],
    [[{ cpu: "1", memory: "1Gi" }, { cpu: "1", memory: "1Gi" }], "2048/4096"],
  ];
  for (const [resources, want] of cases) {
    const size = sized(...resources);
    assert.equal(`${size.cpu}/${size.memory}`, want, JSON.stringify(resources));
  }
  assert.equal(sized({ cpu: "256m", memory: "512Mi" }).rounded, true, "256m is 262 units");
  assert.equal(sized({ cpu: "0.25", memory: "2Gi" }).rounded, false);
});

Deno.test("task size: limits count where they are larger than requests", () => {
  const size = taskSize(pod({}, [{
    resources: { requests: { cpu: "100m", memory: "100Mi" }, limits: { cpu: "1", memory: "4Gi" } },
  }]));
  assert.equal(`${size.cpu}/${size.memory}`, "1024/4096");
});

Deno.test("task size: a pod larger than any Fargate task is refused, naming resources", () => {
  assert.throws(() => sized({ cpu: "17" }), (err: Error) => {
    assert.ok(isInvalidInput(err));
    assert.match(err.message, /resources/);
    assert.match(err.message, /16 vCPU/);
    return true;
  });
});

Deno.test("fields Fargate cannot honour fail the pod, naming the field", () => {
  const cases: Array<[Pod, RegExp]> = [
    [pod({ hostNetwork: true }), /^spec\.hostNetwork:/],
    [pod({ hostPID: true }), /^spec\.hostPID:/],
    [
      pod({ volumes: [{ name: "h", hostPath: { path: "/etc" } }] }),
      /^spec\.volumes\[0\]\.hostPath:/,
    ],
    [
      pod({ volumes: [{ name: "c", persistentVolumeClaim: { claimName: "x" } }] }),
      /^spec\.volumes\[0\]\.persistentVolumeClaim: volume c:/,
    ],
    [
      pod({ volumes: [{ name: "m", emptyDir: { medium: "Memory" } }] }),
      /^spec\.volumes\[0\]\.emptyDir\.medium:/,
    ],
    [
      pod({ initContainers: [{ name: "i", image: "busybox", restartPolicy: "Always" }] }),
      /^spec\.initContainers\[0\]\.restartPolicy:/,
    ],
    [
      pod({}, [{}, { securityContext: { privileged: true } }]),
      /^spec\.containers\[1\]\.securityContext\.privileged:/,
    ],
    [
      pod({}, [{ securityContext: { capabilities: { add: ["NET_ADMIN"] } } }]),
      /^spec\.containers\[0\]\.securityContext\.capabilities\.add:.*NET_ADMIN/,
    ],
    [pod({}, [{ ports: [{ containerPort: 80, protocol: "SCTP" }] }]), /ports\[0\]\.protocol:/],
    [pod({}, [{ ports: [{ containerPort: 80, hostPort: 8080 }] }]), /ports\[0\]\.hostPort:/],
    [
      pod({ volumes: [{ name: "d", emptyDir: {} }] }, [{
        volumeMounts: [{ name: "d", mountPath: "/d", subPath: "x" }],
      }]),
      /volumeMounts\[0\]\.subPath:/,
    ],
  ];
  for (const [p, field] of cases) {
    assert.throws(() => taskDefinitionFor(p, config, "node-1"), (err: Error) => {
      assert.ok(isInvalidInput(err), `${field}: ${err}`);
      assert.match(err.message, field);
      return true;
    });
  }
});

Deno.test("a pod becomes a Fargate task definition with the pod's identity in tags", () => {
  const plan = taskDefinitionFor(
    pod({ volumes: [{ name: "scratch", emptyDir: {} }], terminationGracePeriodSeconds: 10 }, [{
      command: ["sh", "-c"],
      args: ["echo hi"],
      env: [{ name: "A", value: "1" }],
      workingDir: "/w",
      ports: [{ containerPort: 53, protocol: "UDP" }],
      volumeMounts: [{ name: "scratch", mountPath: "/tmp/s" }],
      securityContext: { runAsUser: 1000, runAsGroup: 10, readOnlyRootFilesystem: true },
      resources: { limits: { memory: "256Mi" } },
    }]),
    { ...config, tags: { team: "a" } },
    "node-1",
  );
  const input = plan.input;
  assert.equal(input.family, "vk_team-a_web-1");
  assert.equal(input.networkMode, "awsvpc");
  assert.deepEqual(input.requiresCompatibilities, ["FARGATE"]);
  assert.equal(input.executionRoleArn, config.executionRoleArn);
  assert.deepEqual(input.volumes, [{ name: "scratch" }]);
  const c = input.containerDefinitions![0];
  assert.deepEqual(c.entryPoint, ["sh", "-c"]);
  assert.deepEqual(c.command, ["echo hi"]);
  assert.deepEqual(c.environment, [{ name: "A", value: "1" }]);
  assert.equal(c.workingDirectory, "/w");
  assert.deepEqual(c.portMappings, [{ containerPort: 53, protocol: "udp", name: undefined }]);
  assert.deepEqual(c.mountPoints, [{
    sourceVolume: "scratch",
    containerPath: "/tmp/s",
    readOnly: false,
  }]);
  assert.equal(c.user, "1000:10");
  assert.equal(c.readonlyRootFilesystem, true);
  assert.equal(c.memory, 256);
  assert.equal(c.stopTimeout, 10);
  assert.equal(c.logConfiguration?.options?.["awslogs-group"], config.logGroup);
  assert.equal(c.logConfiguration?.options?.["awslogs-stream-prefix"], "vk");
  const tags = Object.fromEntries(input.tags!.map((t) => [t.key, t.value]));
  assert.deepEqual(tags, {
    team: "a",
    "vkubelet.io/namespace": "team-a",
    "vkubelet.io/pod": "web.1",
    "vkubelet.io/uid": "u-1",
    "vkubelet.io/node": "node-1",
  });
});

Deno.test("what runs differently is said: rounding, grace period, probes, the token volume", () => {
  const plan = taskDefinitionFor(
    pod({
      terminationGracePeriodSeconds: 600,
      volumes: [{ name: "kube-api-access-abcde", projected: { sources: [] } }],
    }, [{
      volumeMounts: [{ name: "kube-api-access-abcde", mountPath: "/var/run/secrets/x" }],
      readinessProbe: { httpGet: { port: 80 } },
      livenessProbe: { exec: { command: ["true"] }, periodSeconds: 2, failureThreshold: 20 },
      resources: { requests: { cpu: "300m" } },
    }]),
    config,
    "node-1",
  );
  const c = plan.input.containerDefinitions![0];
  assert.deepEqual(c.mountPoints, []);
  assert.equal(c.stopTimeout, 120);
  assert.deepEqual(c.healthCheck, {
    command: ["CMD", "true"],
    interval: 5,
    timeout: 2,
    retries: 10,
    startPeriod: 0,
  });
  const notes = plan.notes.join("\n");
  assert.match(notes, /task size rounded up.*0\.5 vCPU and 1024 MiB/);
  assert.match(notes, /terminationGracePeriodSeconds 600/);
  assert.match(notes, /container c0: only an exec livenessProbe runs/);
  assert.match(notes, /service-account token volume kube-api-access-abcde is not mounted/);
});

Deno.test("config: every problem is reported at once, each naming its field", () => {
  const result = parseFargateConfig({
    region: "Ireland",
    subnets: [],
    securityGroups: ["default"],
    executionRoleArn: "exec",
    statusInterval: "fast",
    capacity: { cpu: "-1" },
    colour: "blue",
  });
  assert.equal(result.ok, false);
  const errors = (result as { errors: string[] }).errors.join("\n");
  for (
    const field of [
      /^region: /m,
      /^subnets: needs at least one subnet/m,
      /^securityGroups\.0: /m,
      /^executionRoleArn: is not an IAM role ARN/m,
      /^statusInterval: /m,
      /^capacity\.cpu: /m,
      /^\(top level\): .*colour/m,
    ]
  ) assert.match(errors, field);
  assert.equal(parseFargateConfig(undefined).ok, false);
});
