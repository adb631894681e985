/**
 * ACI pods' logs and --pod-log-dir: off by default (following a container is a
 * Containers_ListLogs read every 2 s, counted against ARM's read limit), on with `mirrorLogs:
 * true`, through Prism and the emulator as the other aci tests.
 */
import assert from "node:assert/strict";
import { PodLogDir, readContainerLog } from "../../../provider/mod.ts";
import { realClock } from "../../../base/clock.ts";
import { aciPod, startProviderOnAci, until } from "../../../tools/harness/aci/env.ts";

async function withLogDir(
  config: Record<string, unknown>,
  check: (lines: () => Promise<string[]>, reads: () => number) => Promise<void>,
) {
  const root = await Deno.makeTempDir({ prefix: "vk-aci-logs-" });
  const podLogs = new PodLogDir({
    dir: `${root}/pods`,
    linkDir: `${root}/containers`,
    maxBytes: 1 << 20,
    maxFiles: 2,
    clock: realClock,
    nodeName: "vk-aci",
  });
  const env = await startProviderOnAci(config, undefined, { podLogs });
  try {
    // The emulator's container writes what its command echoes.
    const pod = aciPod("talk", {
      containers: [{
        name: "main",
        image: "busybox",
        command: ["/bin/sh", "-c", "echo one; echo two; echo three; exec sleep 3600"],
      }],
    });
    await env.provider.createPod(pod, {});
    await until("the pod running", async () => {
      const p = await env.provider.getPod("team-a", "talk", {});
      return p?.status?.containerStatuses?.[0]?.state?.running ? true : undefined;
    });
    const path = podLogs.logPath({
      namespace: "team-a",
      pod: "talk",
      uid: pod.metadata!.uid!,
      container: "main",
      restartCount: 0,
    });
    await check(
      async () =>
        (await readContainerLog(path).catch(() => [])).map((r) => new TextDecoder().decode(r.text)),
      () => env.emu.requests.filter((r) => /\/logs(\?|$)/.test(r)).length,
    );
  } finally {
    await env.close();
    await Deno.remove(root, { recursive: true });
  }
}

Deno.test("by default an ACI pod's log is not followed: no log reads, nothing in the pod log directory", async () => {
  await withLogDir({}, async (lines, reads) => {
    await new Promise((r) => setTimeout(r, 3000)); // a follow reads every 2 s
    assert.equal(reads(), 0);
    assert.deepEqual(await lines(), []);
  });
});

Deno.test("with mirrorLogs: true an ACI pod's log reaches the pod log directory", async () => {
  await withLogDir({ mirrorLogs: true }, async (lines) => {
    await until("the lines in 0.log", async () => (await lines()).length === 3 || undefined);
    assert.deepEqual(await lines(), ["one", "two", "three"]);
  });
});
