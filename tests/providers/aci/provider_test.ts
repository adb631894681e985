/**
 * The aci provider in this process against the ACI emulator behind Prism: throttling and
 * transient errors retried without failing the pod, capacity lowered to the location's quota,
 * logs with since/follow and `previous` refused, and a reply that strays from Azure's
 * specification caught by Prism.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import type { Node } from "kubernetes-types/core/v1.d.ts";
import { isNotSupported } from "../../../provider/mod.ts";
import { aciPod, startProviderOnAci, until } from "../../../tools/harness/aci/env.ts";

const sleeper = (name: string) =>
  aciPod(name, {
    containers: [{
      name: "main",
      image: "busybox",
      command: ["/bin/sh", "-c", "echo one; echo two; echo three; exec sleep 3600"],
    }],
  });

const running = (env: Awaited<ReturnType<typeof startProviderOnAci>>, name: string) =>
  until(`${name} Running`, async () => {
    const p = await env.provider.getPod("team-a", name, {});
    return p?.status?.phase === "Running" ? p : undefined;
  });

Deno.test("429 with Retry-After and 503 are retried by the SDK: the pod still starts", async () => {
  const env = await startProviderOnAci();
  try {
    // After the start-up reads, so that both 429s fall on the PUT.
    await until(
      "the start-up reads",
      () => env.emu.requests.some((r) => r.endsWith("/capabilities")),
    );
    env.emu.throttle(2);
    await env.provider.createPod(sleeper("busy"), {});
    env.emu.fail(2);
    const pod = await running(env, "busy");
    assert.equal(pod.status?.containerStatuses?.[0]?.restartCount, 0);
    const puts = env.emu.requests.filter((r) => r.startsWith("PUT "));
    assert.equal(puts.length, 3, "the PUT was sent again after each 429");
    assert.equal(env.emu.groups.size, 1, "one group, not one per try");
  } finally {
    await env.close();
  }
});

Deno.test("ping reads one page of the resource group's container groups and succeeds", async () => {
  const env = await startProviderOnAci();
  try {
    await env.provider.ping({ signal: AbortSignal.timeout(30_000) });
  } finally {
    await env.close();
  }
});

Deno.test("the node's capacity is lowered to the container groups the quota has free", async () => {
  const low = await startProviderOnAciWithQuota(3);
  try {
    const node: Node = { metadata: { name: low.deps.nodeName } };
    low.provider.configureNode(node);
    assert.equal(node.status?.capacity?.pods, "3", "capacity.pods 200 lowered to the quota's 3");
    assert.equal(node.status?.capacity?.cpu, "100", "cores are within the quota");
  } finally {
    await low.close();
  }
});

/** A provider whose emulator reports `free` container groups before the provider asks. */
async function startProviderOnAciWithQuota(free: number) {
  const env = await startProviderOnAci();
  env.emu.quota.groups = free;
  // Build a second provider on the same backend now that the quota is set.
  const { createProvider } = await import("../../../providers/aci/mod.ts");
  const { aciConfig } = await import("../../../tools/harness/aci/env.ts");
  const shutdown = new AbortController();
  const deps = { ...env.deps, signal: shutdown.signal };
  const provider = createProvider(aciConfig(env.prism.url), deps);
  await new Promise<void>((resolve) => provider.notifyNodeChanged(resolve));
  return {
    provider,
    deps,
    async close() {
      shutdown.abort();
      await provider.close();
      await env.close();
    },
  };
}

Deno.test("logs: sinceSeconds filters by ACI's times, follow sends new lines, previous is refused", async () => {
  const env = await startProviderOnAci();
  try {
    await env.provider.createPod(sleeper("talk"), {});
    await running(env, "talk");
    const ref = { namespace: "team-a", pod: "talk", container: "main" };
    const all = await new Response(await env.provider.getContainerLogs(ref, {})).text();
    assert.equal(all, "one\ntwo\nthree\n");
    const none = await new Response(
      await env.provider.getContainerLogs(ref, { sinceTime: new Date(Date.now() + 60_000) }),
    ).text();
    assert.equal(none, "", "no line is newer than a minute from now");
    const abort = new AbortController();
    const stream = await env.provider.getContainerLogs(ref, { follow: true, signal: abort.signal });
    const reader = stream.getReader();
    const first = await reader.read();
    assert.equal(Buffer.from(first.value!).toString(), "one\n");
    abort.abort();
    await reader.cancel();
    await assert.rejects(
      env.provider.getContainerLogs(ref, { previous: true }),
      (err: Error) => isNotSupported(err) && /previous run/.test(err.message),
    );
  } finally {
    await env.close();
  }
});

Deno.test("a reply that strays from Azure's specification is caught by Prism", async () => {
  const env = await startProviderOnAci();
  try {
    await env.provider.createPod(sleeper("bad"), {});
    await running(env, "bad");
    // restartCount must be an integer: the emulator now sends a string.
    env.emu.mangle = (group) => {
      group.properties.containers[0].properties.instanceView.restartCount = "many";
      return group;
    };
    await until("a violation in Prism's log", () => env.violations().length > 0 || undefined);
    const pod = await env.provider.getPod("team-a", "bad", {});
    assert.equal(
      pod?.status?.containerStatuses?.[0]?.restartCount,
      0,
      "the bad reply was not used",
    );
  } finally {
    await env.close();
  }
});

Deno.test("a pod's security context reaches ACI as the specification's securityContext", async () => {
  const env = await startProviderOnAci();
  try {
    const pod = aciPod("restricted", {
      securityContext: { runAsUser: 1000, runAsGroup: 1000, runAsNonRoot: true },
      containers: [{
        name: "main",
        image: "busybox",
        command: ["/bin/sh", "-c", "exec sleep 3600"],
        securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
      }],
    });
    await env.provider.createPod(pod, {});
    // Prism checked the PUT against the 2023-05-01 specification before the emulator stored it.
    await running(env, "restricted");
    const [group] = [...env.emu.groups.values()];
    assert.deepEqual(group.body.properties.containers[0].properties.securityContext, {
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
      runAsUser: 1000,
      runAsGroup: 1000,
    });
  } finally {
    await env.close();
  }
});
