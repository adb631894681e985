/**
 * The zun provider against the real stack (tools/harness/zun.ts) for what the conformance suite
 * does not cover: an application credential made in keystone authenticates it; a ping's error
 * names the endpoint that failed; a capsule's logs and exec answer 501 saying why; the node's capacity comes
 * from the project's quotas (the demo user may not list Zun's hosts); a pod Zun refuses fails
 * with Zun's reason; a pod's ports are opened by a security group Zun makes in Neutron (the
 * harness's stand-in) and removed with the pod.
 */
import assert from "node:assert/strict";
import type { ContainerPort, Node, Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { getLogger } from "../../../base/log.ts";
import { isInvalidInput, isNotSupported, type ProviderDeps } from "../../../provider/mod.ts";
import { freePort } from "../../../tools/cluster/ports.ts";
import { createProvider, type ZunProvider } from "../../../providers/zun/mod.ts";
import { useZun, zunSkipReason, type ZunStack } from "../../../tools/harness/zun.ts";
import { withEnv } from "./_env.ts";

const skip = await zunSkipReason();

function deps(signal: AbortSignal): ProviderDeps {
  return {
    nodeName: `vk-zun-${crypto.randomUUID().slice(0, 6)}`,
    log: getLogger(["test"]),
    clock: realClock,
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal,
  };
}

/** A pod in default that sleeps, its name `prefix` and a time, with `ports` if given. */
function sleepingPod(prefix: string, ports?: ContainerPort[]): Pod {
  return {
    metadata: { namespace: "default", name: `${prefix}-${Date.now()}`, uid: crypto.randomUUID() },
    spec: {
      containers: [{
        name: "main",
        image: "localhost/busybox:latest",
        command: ["sleep", "600"],
        ...(ports ? { ports } : {}),
      }],
    },
  };
}

async function withProvider(
  env: Record<string, string>,
  fn: (p: ZunProvider) => Promise<void>,
  exposePorts = false,
): Promise<void> {
  const restore = withEnv(env);
  const stop = new AbortController();
  const provider = createProvider({ statusInterval: "1s", exposePorts }, deps(stop.signal));
  try {
    await fn(provider);
  } finally {
    stop.abort();
    await provider.close();
    restore();
  }
}

/** Deletes `pod` and waits until Zun has removed it (the kit removes after deletePod returns). */
async function deleted(p: ZunProvider, pod: Pod): Promise<void> {
  await p.deletePod(pod, { signal: AbortSignal.timeout(180_000) });
  const deadline = Date.now() + 180_000;
  while (await p.getPod(pod.metadata!.namespace!, pod.metadata!.name!, {})) {
    if (Date.now() > deadline) throw new Error("the pod's capsule was not removed in 180 s");
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** A token of the demo user in project demo, and the user's id. */
async function demoToken(zun: ZunStack): Promise<{ token: string; user: string }> {
  const auth = await fetch(`${zun.authUrl}/auth/tokens`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({
      auth: {
        identity: {
          methods: ["password"],
          password: { user: { name: "demo", domain: { id: "default" }, password: "secret" } },
        },
        scope: { project: { name: "demo", domain: { id: "default" } } },
      },
    }),
  });
  assert.equal(auth.status, 201);
  return { token: auth.headers.get("X-Subject-Token")!, user: (await auth.json()).token.user.id };
}

interface SecurityGroup {
  name: string;
  security_group_rules: { direction: string; protocol: string; port_range_min: unknown }[];
}

async function securityGroups(zun: ZunStack, token: string): Promise<SecurityGroup[]> {
  const listed = await fetch(`${zun.neutron}/v2.0/security-groups`, {
    headers: { "X-Auth-Token": token },
  });
  assert.equal(listed.status, 200);
  return (await listed.json()).security_groups;
}

async function applicationCredential(zun: ZunStack): Promise<Record<string, string>> {
  const { token, user } = await demoToken(zun);
  const made = await fetch(`${zun.authUrl}/users/${user}/application_credentials`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Auth-Token": token },
    body: JSON.stringify({ application_credential: { name: `vk-${crypto.randomUUID()}` } }),
  });
  assert.equal(made.status, 201, await made.clone().text());
  const credential = (await made.json()).application_credential;
  return {
    OS_AUTH_URL: zun.authUrl,
    OS_AUTH_TYPE: "v3applicationcredential",
    OS_APPLICATION_CREDENTIAL_ID: credential.id,
    OS_APPLICATION_CREDENTIAL_SECRET: credential.secret,
    OS_REGION_NAME: "RegionOne",
  };
}

Deno.test({
  name: "zun provider on zun-api 18.0.0: credentials, ping, capacity, 501s, refusals, ports",
  ignore: skip !== undefined,
  async fn(t) {
    const zun = await useZun();
    try {
      await t.step("an application credential authenticates it (ping reaches Zun)", async () => {
        await withProvider(await applicationCredential(zun), (p) => p.ping({}));
      });

      await t.step("a ping that cannot reach keystone names the URL it tried", async () => {
        const port = freePort();
        await withProvider(
          { ...zun.env, OS_AUTH_URL: `http://127.0.0.1:${port}/v3` },
          async (p) => {
            const err = await p.ping({}).then(() => undefined, (e) => e as Error);
            assert.match(
              err?.message ?? "",
              new RegExp(`keystone at http://127\\.0\\.0\\.1:${port}/v3/auth/tokens`),
            );
          },
        );
      });

      await t.step(
        "capacity from the project's quotas; a capsule's logs and exec answer 501 saying why",
        async () => {
          await withProvider(zun.env, async (p) => {
            await p.ping({});
            const node: Node = { metadata: { name: "n" }, status: {} };
            p.configureNode(node);
            assert.ok(Number(node.status?.capacity?.pods) > 0, JSON.stringify(node.status));
            const pod = sleepingPod("logs");
            // Two containers: a capsule (one container would run as a plain Zun container).
            pod.spec!.containers.push({ ...pod.spec!.containers[0], name: "side" });
            await p.createPod(pod, { signal: AbortSignal.timeout(60_000) });
            try {
              const ref = { namespace: "default", pod: pod.metadata!.name!, container: "main" };
              const logs = await p.getContainerLogs(ref, {}).then(() => undefined, (e) => e);
              assert.ok(isNotSupported(logs), String(logs));
              assert.match(logs.message, /Zun keeps no logs/);
              const exec = await p.runInContainer(ref, {
                command: ["true"],
                io: {} as never,
              }).then(() => undefined, (e) => e);
              assert.ok(isNotSupported(exec), String(exec));
              assert.match(exec.message, /exec is not supported by this node's provider: Zun/);
            } finally {
              await deleted(p, pod);
            }
          });
        },
      );

      await t.step(
        "a pod Zun refuses (memory above its maximum) fails with Zun's reason",
        async () => {
          await withProvider(zun.env, async (p) => {
            const pod: Pod = {
              metadata: {
                namespace: "default",
                name: `big-${Date.now()}`,
                uid: crypto.randomUUID(),
              },
              spec: {
                containers: [{
                  name: "main",
                  image: "localhost/busybox:latest",
                  resources: { limits: { memory: "64Gi" } },
                }],
              },
            };
            const err = await p.createPod(pod, { signal: AbortSignal.timeout(60_000) }).then(
              () => undefined,
              (e) => e,
            );
            assert.ok(isInvalidInput(err), String(err));
            assert.match(err.message, /Zun refused the container of default\/big-.*memory/);
          });
        },
      );

      await t.step(
        "a pod's ports: Zun opens them in a security group of the pod's own, gone with the pod",
        async () => {
          const { token } = await demoToken(zun);
          const before = new Set((await securityGroups(zun, token)).map((g) => g.name));
          await withProvider(zun.env, async (p) => {
            const pod = sleepingPod("web", [
              { containerPort: 8080 },
              { containerPort: 5353, protocol: "UDP" },
            ]);
            const { namespace, name } = pod.metadata as { namespace: string; name: string };
            await p.createPod(pod, { signal: AbortSignal.timeout(60_000) });
            try {
              const deadline = Date.now() + 120_000;
              let phase: string | undefined;
              while (phase !== "Running" && Date.now() < deadline) {
                await new Promise((r) => setTimeout(r, 1_000));
                phase = (await p.getPod(namespace, name, {}))?.status?.phase;
              }
              assert.equal(phase, "Running");
              const made = (await securityGroups(zun, token)).filter((g) => !before.has(g.name));
              assert.equal(made.length, 1, JSON.stringify(made));
              assert.match(made[0].name, /^zun-/);
              const rules = made[0].security_group_rules.map((r) =>
                `${r.direction} ${r.protocol} ${r.port_range_min}`
              ).sort();
              assert.deepEqual(rules, ["ingress tcp 8080", "ingress udp 5353"]);
            } finally {
              await deleted(p, pod);
            }
          }, true);
          const left = (await securityGroups(zun, token)).filter((g) => !before.has(g.name));
          assert.deepEqual(left, []);
        },
      );
    } finally {
      await zun.stop();
    }
  },
});
