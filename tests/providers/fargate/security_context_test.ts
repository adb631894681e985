/**
 * The pod's securityContext on Fargate: merged into each container as the kubelet merges it, the
 * user and dropped capabilities in the task definition ECS registers (moto), and what cannot be
 * checked refused naming the field.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { isInvalidInput } from "../../../provider/mod.ts";
import { parseFargateConfig } from "../../../providers/fargate/config.ts";
import { taskDefinitionFor } from "../../../providers/fargate/request/task_definition.ts";
import { motoPod, startProviderOnMoto } from "./_provider.ts";

const CALL = { signal: AbortSignal.timeout(30_000) };

Deno.test("the pod's securityContext reaches every container's task definition", async (t) => {
  const env = await startProviderOnMoto();
  try {
    await t.step("pod-level user and group, a container's own user over them, drops", async () => {
      const pod = motoPod("secure", {
        securityContext: { runAsUser: 1000, runAsGroup: 3000, runAsNonRoot: true },
        containers: [
          {
            name: "app",
            image: "busybox",
            securityContext: { capabilities: { drop: ["ALL"] } },
          },
          {
            name: "side",
            image: "busybox",
            securityContext: { runAsUser: 2000, capabilities: { drop: ["CAP_NET_RAW"] } },
          },
        ],
      });
      await env.provider.createPod(pod, CALL);
      const def = await env.activeDefinition(pod);
      const [app, side] = def.containerDefinitions ?? [];
      assert.equal(app.user, "1000:3000");
      assert.deepEqual(app.linuxParameters?.capabilities?.drop, ["ALL"]);
      assert.equal(side.user, "2000:3000");
      assert.deepEqual(side.linuxParameters?.capabilities?.drop, ["NET_RAW"]);
      await env.provider.deletePod(pod, CALL);
    });

    await t.step("runAsNonRoot without a user is refused and registers nothing", async () => {
      const pod = motoPod("nonroot", { securityContext: { runAsNonRoot: true } });
      await assert.rejects(env.provider.createPod(pod, CALL), (err: Error) => {
        assert.ok(isInvalidInput(err), String(err));
        assert.match(
          err.message,
          /^spec\.containers\[0\]\.securityContext\.runAsNonRoot: .*runAsUser/,
        );
        return true;
      });
      assert.deepEqual(await env.definitionsOf(pod, "ACTIVE"), []);
    });
  } finally {
    await env.close();
  }
});

Deno.test("security contexts Fargate cannot honour are refused, naming the field", () => {
  const parsed = parseFargateConfig({
    region: "eu-west-1",
    subnets: ["subnet-0abc"],
    executionRoleArn: "arn:aws:iam::123456789012:role/exec",
  });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const cases: Array<[Partial<NonNullable<Pod["spec"]>>, RegExp]> = [
    [{ securityContext: { runAsNonRoot: true, runAsUser: 0 } }, /runAsUser: 0 breaks/],
    [{ securityContext: { runAsGroup: 10 } }, /securityContext\.runAsGroup: .*set runAsUser/],
    [{ securityContext: { runAsNonRoot: true } }, /securityContext\.runAsNonRoot:/],
  ];
  for (const [spec, message] of cases) {
    assert.throws(() => taskDefinitionFor(motoPod("x", spec), parsed.config, "n"), (err: Error) => {
      assert.ok(isInvalidInput(err));
      assert.match(err.message, message);
      return true;
    });
  }
  // A container's own user satisfies the pod's runAsNonRoot.
  const ok = taskDefinitionFor(
    motoPod("x", {
      securityContext: { runAsNonRoot: true },
      containers: [{ name: "c", image: "busybox", securityContext: { runAsUser: 5 } }],
    }),
    parsed.config,
    "n",
  );
  assert.equal(ok.input.containerDefinitions?.[0].user, "5");
});
