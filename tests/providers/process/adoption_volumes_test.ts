import assert from "node:assert/strict";
import type { ConfigMap } from "kubernetes-types/core/v1.d.ts";
import type { VolumeSource } from "../../../providers/process/volumes/volumes.ts";
import { probeMountNamespace } from "../../../providers/process/launch/mount_ns.ts";
import { cleanup, collector, makePod, readAll, startProvider, waitFor } from "./_helpers.ts";

Deno.test("a new provider on the same state dir re-adopts running processes", async () => {
  const first = await startProvider();
  const pod = makePod([{
    name: "c",
    image: "x",
    command: ["sh", "-c", "echo before; until [ -e go ]; do sleep 0.1; done; echo after; sleep 30"],
  }]);
  const name = pod.metadata!.name!;
  const ref = { namespace: "default", pod: name, container: "c" };
  const second = { t: undefined as Awaited<ReturnType<typeof startProvider>> | undefined };
  try {
    await first.provider.createPod(pod, {});
    const pid = await waitFor(
      "running",
      () => first.provider.runnerOf("default", name)?.live("c")?.instance.record.pid,
    );
    await waitFor(
      "first log line",
      async () =>
        (await readAll(await first.provider.getContainerLogs(ref, {}))).includes("before"),
    );
    await first.close({ keepState: true }); // vkubelet exits: the process keeps running
    assert.ok(Deno.statSync(`/proc/${pid}`));
    second.t = await startProvider({ stateDir: first.stateDir });
    const adopted = second.t.provider.runnerOf("default", name)?.live("c")?.instance.record.pid;
    assert.equal(adopted, pid);
    await second.t.provider.createPod(pod, {}); // same uid: no second instance
    const pods = await second.t.provider.listPods({});
    assert.equal(pods.length, 1);
    assert.equal(pods[0].status?.containerStatuses?.[0].restartCount, 0);
    assert.equal(pods[0].status?.phase, "Running");
    const processes = [...Deno.readDirSync("/proc")].filter((e) => {
      try {
        const argv = Deno.readTextFileSync(`/proc/${e.name}/cmdline`).split("\0");
        return argv[0] === "sh" && argv[2]?.startsWith("echo before");
      } catch {
        return false;
      }
    });
    assert.equal(processes.length, 1);
    // Output written after the restart still reaches the log.
    const exec = await second.t.provider.runInContainer(ref, {
      command: ["touch", "go"],
      io: { tty: false },
    });
    assert.equal(exec, 0);
    await waitFor(
      "output after re-adoption",
      async () =>
        (await readAll(await second.t!.provider.getContainerLogs(ref, {}))) === "before\nafter\n",
    );
  } finally {
    if (second.t) {
      await cleanup(second.t.provider, pod);
      await second.t.close();
    }
  }
});

Deno.test("stats report non-zero CPU and memory for a busy process", async () => {
  const t = await startProvider();
  const pod = makePod([{ name: "busy", image: "x", command: ["sh", "-c", "while :; do :; done"] }]);
  try {
    await t.provider.createPod(pod, {});
    await waitFor(
      "running",
      () => t.provider.runnerOf("default", pod.metadata!.name!)?.live("busy"),
    );
    await new Promise((r) => setTimeout(r, 600));
    const summary = await t.provider.getStatsSummary({});
    const stats = summary.pods.find((p) => p.podRef.name === pod.metadata!.name)!;
    const c = stats.containers[0];
    assert.ok(c.cpu!.usageCoreNanoSeconds! > 100_000_000, `cpu ${c.cpu!.usageCoreNanoSeconds}`);
    assert.ok(c.cpu!.usageNanoCores! > 100_000_000, `rate ${c.cpu!.usageNanoCores}`);
    assert.ok(c.memory!.workingSetBytes! > 100_000, `memory ${c.memory!.workingSetBytes}`);
    const metrics = await t.provider.getMetricsResource({});
    assert.match(
      metrics,
      new RegExp(
        `container_cpu_usage_seconds_total\\{container="busy",namespace="default",pod="${
          pod.metadata!.name
        }"\\} 0\\.[1-9]`,
      ),
    );
  } finally {
    await cleanup(t.provider, pod);
    await t.close();
  }
});

const mountNamespace = await probeMountNamespace();

Deno.test({
  name: "a configMap volume is visible at its mountPath and updates propagate",
  ignore: !mountNamespace.ok,
  fn: async () => {
    let value = "first";
    const source: VolumeSource = {
      getConfigMap: (_ns, name) =>
        Promise.resolve(name === "settings" ? { data: { key: value } } as ConfigMap : undefined),
      getSecret: () => Promise.resolve(undefined),
      createToken: () => Promise.reject(new Error("no tokens here")),
    };
    const t = await startProvider({
      volumeSource: source,
      config: { volumeSyncInterval: "200ms" },
    });
    const mountPath = `/etc/vk-test-${crypto.randomUUID().slice(0, 8)}/config`;
    const pod = makePod([{
      name: "c",
      image: "x",
      command: ["sleep", "30"],
      volumeMounts: [{ name: "cfg", mountPath }],
    }], { volumes: [{ name: "cfg", configMap: { name: "settings", defaultMode: 0o640 } }] });
    const ref = { namespace: "default", pod: pod.metadata!.name!, container: "c" };
    const cat = async () => {
      const out = collector();
      const err = collector();
      const code = await t.provider.runInContainer(ref, {
        command: ["sh", "-c", `cat ${mountPath}/key; stat -L -c %a ${mountPath}/key`],
        io: { stdout: out.writable, stderr: err.writable, tty: false },
      });
      return { code, text: out.text() + err.text() };
    };
    try {
      await t.provider.createPod(pod, {});
      await waitFor("running", () => t.provider.runnerOf("default", ref.pod)?.live("c"));
      assert.deepEqual(await cat(), { code: 0, text: "first640\n" });
      assert.throws(() => Deno.statSync(mountPath), "the host does not see the mount path");
      value = "second";
      await waitFor("update visible", async () => (await cat()).text.startsWith("second"), 5000);
    } finally {
      await cleanup(t.provider, pod);
      await t.close();
    }
  },
});
