/**
 * Volumes as a non-root pod meets them: its emptyDir is writable (mode 0777, as the kubelet
 * makes it), and a subPath may not lead out of its volume through a symlink.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { cleanup, makePod, readAll, startProvider, waitFor } from "./_helpers.ts";

const isRoot = Deno.uid() === 0;

/** The logs of the pod's container `c` once they hold `marker`. */
async function logsWith(
  t: Awaited<ReturnType<typeof startProvider>>,
  pod: Pod,
  marker: string,
): Promise<string> {
  const ref = { namespace: "default", pod: pod.metadata!.name!, container: "c" };
  return await waitFor(`logs with ${marker}`, async () => {
    const text = await readAll(await t.provider.getContainerLogs(ref, {}));
    return text.includes(marker) && text;
  });
}

Deno.test({
  name: "a runAsUser 1000 pod can write its emptyDir, which is mode 0777",
  ignore: !isRoot,
  fn: async () => {
    const t = await startProvider();
    const pod = makePod([{
      name: "c",
      image: "x",
      command: [
        "sh",
        "-c",
        "echo written > /scratch/f && cat /scratch/f; stat -c 'mode %a' /scratch; echo done",
      ],
      securityContext: { runAsUser: 1000, allowPrivilegeEscalation: false },
      volumeMounts: [{ name: "scratch", mountPath: "/scratch" }],
    }], { restartPolicy: "Never", volumes: [{ name: "scratch", emptyDir: {} }] });
    try {
      await t.provider.createPod(pod, {});
      assert.equal(await logsWith(t, pod, "done"), "written\nmode 777\ndone\n");
    } finally {
      await cleanup(t.provider, pod);
      await t.close();
    }
  },
});
