import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "@logtape/logtape";
import { realClock } from "../../base/clock.ts";
import { PodLogDir, type ProviderDeps } from "../../provider/mod.ts";
import { createProvider } from "../../providers/process/mod.ts";
import { probeMountNamespace } from "../../providers/process/launch/mount_ns.ts";
import { eventually } from "../../tools/harness/wait.ts";

const views = (await probeMountNamespace()).ok ? {} : { mountNamespace: "off" };

async function startProcess(stateDir: string, logRoot: string) {
  const shutdown = new AbortController();
  const deps: ProviderDeps = {
    nodeName: "vk-test",
    log: getLogger(["vkubelet", "provider", "test"]),
    clock: realClock,
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal: shutdown.signal,
    podLogs: new PodLogDir({
      dir: `${logRoot}/pods`,
      linkDir: `${logRoot}/containers`,
      maxBytes: 10 << 20,
      maxFiles: 5,
      clock: realClock,
      nodeName: "vk-test",
    }),
  };
  const allowedIds = { uids: ["1000-65535"], gids: ["1000-65535"] };
  const provider = await createProvider(
    { stateDir, cgroups: "off", allowedIds, ...views },
    deps,
  );
  return {
    provider,
    async close() {
      shutdown.abort();
      await provider.close();
    },
  };
}

function records(text: string): string[] {
  return text.split("\n").filter((l) => l).map((l) => l.replace(/^\S+ /, ""));
}

Deno.test("the process provider writes each instance's output to <ns>_<pod>_<uid>/<c>/<restart>.log, once, across its restart and vkubelet's", async () => {
  const stateDir = await Deno.makeTempDir({ prefix: "vk-pod-logs-state-" });
  const logRoot = await Deno.makeTempDir({ prefix: "vk-pod-logs-" });
  const uid = crypto.randomUUID();
  const pod: Pod = {
    metadata: { namespace: "default", name: `logs-${Date.now() % 100000}`, uid },
    spec: {
      nodeName: "vk-test",
      restartPolicy: "OnFailure",
      terminationGracePeriodSeconds: 1,
      containers: [{
        name: "c",
        image: "x",
        // First instance: two lines (one to stderr) and exit 1; the second writes a line a
        // tenth of a second for ever, and runs on while vkubelet restarts.
        command: [
          "sh",
          "-c",
          'if [ -e run ]; then i=0; while :; do i=$((i+1)); echo "tick $i"; sleep 0.1; done; else touch run; echo one; echo two >&2; exit 1; fi',
        ],
      }],
    },
  };
  const podDir = `${logRoot}/pods/default_${pod.metadata!.name}_${uid}`;
  let t = await startProcess(stateDir, logRoot);
  try {
    await t.provider.createPod(pod, {});
    const second = `${podDir}/c/1.log`;
    await eventually(
      "the second instance's log",
      async () => (await Deno.readTextFile(second).catch(() => "")).includes("tick 3"),
      15_000,
      50,
    );
    // stdout and stderr are two pipes, read apart: their lines keep each stream's order, not one
    // across the two (as the kubelet's files: containerd copies each pipe on its own).
    assert.deepEqual(records(await Deno.readTextFile(`${podDir}/c/0.log`)).sort(), [
      "stderr F two",
      "stdout F one",
    ]);
    const links = await Array.fromAsync(Deno.readDir(`${logRoot}/containers`));
    assert.ok(
      links.some((l) => l.name.startsWith(`${pod.metadata!.name}_default_c-`) && l.isSymlink),
      links.map((l) => l.name).join(" "),
    );

    // vkubelet stops and starts again; the container runs on.
    await t.close();
    await new Promise((r) => setTimeout(r, 500));
    t = await startProcess(stateDir, logRoot);
    await t.provider.restore();
    const before = records(await Deno.readTextFile(second)).length;
    await eventually(
      "ticks after the restart",
      async () => records(await Deno.readTextFile(second)).length >= before + 5,
      15_000,
      50,
    );
    const ticks = records(await Deno.readTextFile(second)).map((r) => Number(r.split(" ")[3]));
    // Every tick once and in order: nothing doubled, nothing lost while vkubelet was away.
    assert.deepEqual(ticks, ticks.map((_, i) => i + 1));

    await t.provider.deletePod({
      ...pod,
      metadata: { ...pod.metadata, deletionGracePeriodSeconds: 0 },
    }, {});
    await assert.rejects(Deno.stat(podDir), Deno.errors.NotFound);
    assert.deepEqual(await Array.fromAsync(Deno.readDir(`${logRoot}/containers`)), []);
  } finally {
    await t.close();
    await Deno.remove(stateDir, { recursive: true }).catch(() => {});
    await Deno.remove(logRoot, { recursive: true }).catch(() => {});
  }
});
