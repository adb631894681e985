/**
 * Every capsule body the zun provider builds passes Zun 18.0.0's own request validation: the
 * bodies go to `tools/harness/zun/check_schema.py`, which runs them through the schemas and
 * template checks of the zun package installed by the harness (no services needed). Skipped,
 * saying so, when the harness's venv could not be installed.
 */
import assert from "node:assert/strict";
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import { capsuleCreateBody, LABELS } from "../../../providers/zun/request/capsule.ts";
import { ZUN_STATE, zunSkipReason } from "../../../tools/harness/zun.ts";

const skip = await zunSkipReason();

function pod(containers: Container[], extra: Partial<Pod["spec"]> = {}): Pod {
  return {
    metadata: { namespace: "team-a", name: "web-0", uid: crypto.randomUUID() },
    spec: { containers, ...extra },
  };
}

async function zunVerdicts(bodies: unknown[]): Promise<(string | null)[]> {
  const child = new Deno.Command(`${ZUN_STATE}/venv/bin/python`, {
    args: [new URL("../../../tools/harness/zun/check_schema.py", import.meta.url).pathname],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(JSON.stringify(bodies)));
  await writer.close();
  const out = await child.output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

const PODS: [string, Pod][] = [
  ["one container, nothing else", pod([{ name: "main", image: "busybox" }])],
  ["a one-letter container name", pod([{ name: "c", image: "busybox" }])],
  [
    "memory 128Mi and cpu 50m (below Zun's minimum)",
    pod([{
      name: "main",
      image: "busybox",
      resources: { limits: { memory: "128Mi", cpu: "50m" } },
    }]),
  ],
  [
    "memory 100M (not whole MiB) and cpu 1.5 from requests",
    pod([{
      name: "main",
      image: "busybox",
      resources: { requests: { memory: "100M", cpu: "1500m" } },
    }]),
  ],
  [
    "command, args with $(VAR), env, working dir, pull policy, tty",
    pod([{
      name: "main",
      image: "localhost/busybox:latest",
      command: ["sh", "-c"],
      args: ["echo $(GREETING)"],
      env: [{ name: "GREETING", value: "hi" }, { name: "EMPTY", value: "" }],
      workingDir: "/tmp",
      imagePullPolicy: "IfNotPresent",
      stdin: true,
      tty: true,
    }]),
  ],
  [
    "ports TCP and UDP",
    pod([{
      name: "main",
      image: "busybox",
      ports: [
        { containerPort: 80 },
        { containerPort: 53, protocol: "UDP" },
        { containerPort: 8080 },
      ],
    }]),
  ],
  [
    "a security context of Zun's defaults, a Secret's value in the env (secretEnv: env)",
    pod([{
      name: "main",
      image: "busybox",
      env: [{ name: "TOKEN", value: "t0k", valueFrom: { secretKeyRef: { name: "s", key: "k" } } }],
      securityContext: { privileged: false, seccompProfile: { type: "RuntimeDefault" } },
    }]),
  ],
  [
    "two containers, restartPolicy Never",
    pod([
      { name: "app", image: "busybox", resources: { limits: { memory: "64Mi" } } },
      { name: "sidecar", image: "busybox", resources: { limits: { memory: "32Mi" } } },
    ], { restartPolicy: "Never" }),
  ],
  [
    "restartPolicy OnFailure",
    pod([{ name: "main", image: "busybox" }], {
      restartPolicy: "OnFailure",
    }),
  ],
];

Deno.test({
  name: "every capsule body the zun provider builds passes Zun 18.0.0's request validation",
  ignore: skip !== undefined,
  async fn() {
    const bodies = PODS.map(([, p]) =>
      capsuleCreateBody(p, { nodeName: "vk-zun", exposePorts: true })
    );
    const verdicts = await zunVerdicts(bodies);
    PODS.forEach(([what], i) => assert.equal(verdicts[i], null, `${what}: ${verdicts[i]}`));
  },
});

Deno.test({
  name: "the schema check refuses what Zun refuses (a fractional memory, a string memory)",
  ignore: skip !== undefined,
  async fn() {
    const good = capsuleCreateBody(PODS[2][1], { nodeName: "vk-zun", exposePorts: true }) as {
      template: { spec: { containers: { resources: { requests: Record<string, unknown> } }[] } };
    };
    const fractional = structuredClone(good);
    fractional.template.spec.containers[0].resources.requests.memory = 137.438953472;
    const asString = structuredClone(good);
    asString.template.spec.containers[0].resources.requests.memory = "128";
    const [a, b] = await zunVerdicts([fractional, asString]);
    assert.match(a ?? "", /137\.438953472 is not of type/);
    // The schema takes "128", but zun-api then adds it to an integer sum (_do_post).
    assert.match(b ?? "", /TypeError/);
  },
});

Deno.test("a capsule carries its pod's identity and its node as labels, memory in whole MiB", () => {
  const p = PODS[3][1];
  const { template } = capsuleCreateBody(p, { nodeName: "vk-zun", exposePorts: false }) as {
    template: {
      metadata: { name: string; labels: Record<string, string> };
      spec: { containers: { resources: { requests: { memory: number; cpu: number } } }[] };
    };
  };
  assert.equal(template.metadata.name, "team-a.web-0");
  assert.deepEqual(template.metadata.labels, {
    [LABELS.node]: "vk-zun",
    [LABELS.namespace]: "team-a",
    [LABELS.name]: "web-0",
    [LABELS.uid]: p.metadata!.uid,
  });
  // 100M = 95.37 MiB: rounded up, never down (the container must not get less than asked).
  assert.deepEqual(template.spec.containers[0].resources.requests, { memory: 96, cpu: 1.5 });
});
