/**
 * `runtime: apptainer` for real (issue 55 item 1): apptainer v1.3.6 built by
 * `tools/harness/apptainer/` (skipped until it is built: `deno run -A
 * tools/harness/apptainer/build.ts`), a busybox sandbox image, a single-node SLURM, jobs as
 * nobody (unprivileged apptainer through user namespaces). The pod's env wins over the image's,
 * a hostPath is bound, `run` gives the image's runscript the pod's args, and `kubectl exec` runs
 * inside the container's instance, and a deleted pod's instance is stopped.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { getLogger } from "../../../base/log.ts";
import { createProvider } from "../../../providers/slurm/mod.ts";
import {
  apptainerBin,
  busyboxSandbox,
  haveApptainer,
} from "../../../tools/harness/apptainer/apptainer.ts";
import { killMarkedProcesses } from "../../../tools/harness/processes.ts";
import { NOBODY, startSlurm } from "../../../tools/harness/slurm.ts";
import { eventually } from "../../../tools/harness/wait.ts";

const isRoot = Deno.statSync("/proc/self").uid === 0;

/** How an apptainer instance of this provider shows in `ps`. */
const INSTANCE = "Apptainer instance: nobody [vk-";

/** The running instances of this provider's pods. */
async function instances(): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const cmdline = await Deno.readTextFile(`/proc/${entry.name}/cmdline`).catch(() => "");
    if (cmdline.startsWith(INSTANCE)) found.push(cmdline);
  }
  return found;
}

Deno.test({
  name: "slurm provider with apptainer: env, binds, run and exec in the instance",
  ignore: !isRoot || !(await haveApptainer()),
  fn: async () => {
    const slurm = await startSlurm();
    Deno.env.set("SLURM_CONF", slurm.conf);
    const image = await busyboxSandbox(`${slurm.dir}/image`);
    const scratch = `${slurm.dir}/scratch`;
    await Deno.mkdir(scratch);
    await Deno.writeTextFile(`${scratch}/input.txt`, "shared input\n");
    await Deno.chmod(`${scratch}/input.txt`, 0o644);
    const stop = new AbortController();
    const provider = createProvider({
      cli: {},
      sharedDir: slurm.sharedDir,
      stateDir: `${slurm.dir}/vk-state`,
      fileOwner: NOBODY,
      statusInterval: "300ms",
      runtime: "apptainer",
      apptainerBin,
      hostPaths: [scratch],
    }, {
      nodeName: "vk-apptainer",
      log: getLogger(["vkubelet", "provider", "test"]),
      clock: realClock,
      internalIp: "127.0.0.1",
      daemonPort: 10250,
      signal: stop.signal,
    });
    const pod = (name: string, spec: Pod["spec"]): Pod => ({
      metadata: { namespace: "hpc", name, uid: crypto.randomUUID() },
      spec: {
        restartPolicy: "Never",
        volumes: [{ name: "data", hostPath: { path: scratch } }],
        ...spec!,
      },
    });
    const logs = async (name: string) =>
      await new Response(
        await provider.getContainerLogs({ namespace: "hpc", pod: name, container: "main" }, {}),
      ).text().catch(() => "");
    const main = pod("main", {
      containers: [{
        name: "main",
        image,
        command: [
          "sh",
          "-c",
          "cat /etc/image-marker; echo $FOO $FROM_IMAGE $OVERRIDE; cat /data/input.txt; echo ready; exec sleep 300",
        ],
        env: [{ name: "FOO", value: "pod" }, { name: "OVERRIDE", value: "pod" }],
        volumeMounts: [{ name: "data", mountPath: "/data", readOnly: true }],
      }],
    });
    const runscript = pod("runscript", {
      containers: [{ name: "main", image, args: ["a", "b c"] }],
    });
    try {
      await provider.createPod(main, {});
      await provider.createPod(runscript, {});
      await eventually("main ready", async () => /ready/.test(await logs("main")), 120_000);
      assert.equal(await logs("main"), "from the image\npod image pod\nshared input\nready\n");
      await eventually(
        "runscript to succeed",
        async () => (await provider.getPod("hpc", "runscript", {}))?.status?.phase === "Succeeded",
        120_000,
      );
      assert.equal(await logs("runscript"), "runscript: a b c\n");
      let out = "";
      const code = await provider.runInContainer(
        { namespace: "hpc", pod: "main", container: "main" },
        {
          command: ["sh", "-c", "cat /etc/image-marker; echo $FOO"],
          io: {
            stdout: new WritableStream({ write: (c) => void (out += new TextDecoder().decode(c)) }),
            tty: false,
          },
        },
      );
      assert.deepEqual(
        [code, out],
        [0, "from the image\npod\n"],
        "kubectl exec runs in the container",
      );
      assert.equal((await instances()).length, 1, "the running pod's instance");
      // A deleted pod's instance (a daemon outside the step's processes) is stopped with it.
      await provider.deletePod(main, {});
      await eventually(
        "the instance to be stopped",
        async () => !(await instances()).length,
        30_000,
      );
    } finally {
      await killMarkedProcesses({ cmdline: INSTANCE });
      await provider.deletePod(main, {}).catch(() => {});
      await provider.deletePod(runscript, {}).catch(() => {});
      await provider.close();
      stop.abort();
      Deno.env.delete("SLURM_CONF");
      await slurm.stop();
    }
  },
});
