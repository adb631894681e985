/**
 * Volumes as a non-root pod meets them: its emptyDir is writable (mode 0777, as the kubelet
 * makes it), and a subPath may not lead out of its volume through a symlink.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { join } from "node:path";
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

Deno.test({
  name: "a subPath that is a symlink out of its volume is refused: another pod's files stay out",
  ignore: !isRoot,
  fn: async () => {
    const t = await startProvider();
    const secret = `s3cret-${crypto.randomUUID()}`;
    // The victim's downwardAPI file is mode 0644, kept out of reach by the pods directory's 0700.
    const victim = makePod([{ name: "v", image: "x", command: ["sleep", "60"] }], {
      volumes: [{
        name: "info",
        downwardAPI: {
          items: [{ path: "token", fieldRef: { fieldPath: "metadata.labels['token']" } }],
        },
      }],
    });
    victim.metadata!.labels = { token: secret };
    const victimFile = join(
      t.stateDir,
      "pods",
      `default_${victim.metadata!.name}_${victim.metadata!.uid}`,
      "volumes",
      "info",
      "token",
    );
    const user = { runAsUser: 1000, allowPrivilegeEscalation: false };
    const attacker = makePod([{
      name: "c",
      image: "x",
      command: ["sh", "-c", "cat /stolen; echo done; sleep 60"],
      securityContext: user,
      volumeMounts: [{ name: "scratch", mountPath: "/stolen", subPath: "link" }],
    }], {
      volumes: [{ name: "scratch", emptyDir: {} }],
      initContainers: [{
        name: "link",
        image: "x",
        command: ["ln", "-s", victimFile, "/scratch/link"],
        securityContext: user,
        volumeMounts: [{ name: "scratch", mountPath: "/scratch" }],
      }],
    });
    try {
      await t.provider.createPod(victim, {});
      await waitFor("the victim's file", () => {
        try {
          return Deno.readTextFileSync(victimFile) === secret;
        } catch {
          return false;
        }
      });
      await t.provider.createPod(attacker, {});
      const status = await waitFor("the attacker's container settled", async () => {
        const p = await t.provider.getPod("default", attacker.metadata!.name!, {});
        const c = p?.status?.containerStatuses?.[0];
        return (c?.state?.running || c?.state?.waiting?.message) ? c : undefined;
      });
      const logs = await readAll(
        await t.provider.getContainerLogs({
          namespace: "default",
          pod: attacker.metadata!.name!,
          container: "c",
        }, {}),
      ).catch(() => "");
      assert.ok(!logs.includes(secret), `the attacker read the victim's file: ${logs}`);
      assert.equal(status.state?.waiting?.reason, "CreateContainerConfigError");
      assert.match(
        status.state!.waiting!.message!,
        /^failed to prepare subPath for volumeMount "scratch" of container "c": it leads out of the volume/,
      );
    } finally {
      await cleanup(t.provider, attacker);
      await cleanup(t.provider, victim);
      await t.close();
    }
  },
});

Deno.test({
  name: "a subPath through a symlink inside its volume is mounted, and a missing one is created",
  ignore: !isRoot,
  fn: async () => {
    const t = await startProvider();
    const user = { runAsUser: 1000, allowPrivilegeEscalation: false };
    const pod = makePod([{
      name: "c",
      image: "x",
      command: [
        "sh",
        "-c",
        "cat /in/f; echo more > /new/x && stat -c 'new %a' /new; echo done",
      ],
      securityContext: user,
      volumeMounts: [
        { name: "scratch", mountPath: "/in", subPath: "inner" },
        { name: "scratch", mountPath: "/new", subPath: "made/here" },
      ],
    }], {
      restartPolicy: "Never",
      volumes: [{ name: "scratch", emptyDir: {} }],
      initContainers: [{
        name: "prepare",
        image: "x",
        command: [
          "sh",
          "-c",
          "mkdir -p /scratch/real/dir && echo inside > /scratch/real/dir/f && ln -s real/dir /scratch/inner",
        ],
        securityContext: user,
        volumeMounts: [{ name: "scratch", mountPath: "/scratch" }],
      }],
    });
    try {
      await t.provider.createPod(pod, {});
      assert.equal(await logsWith(t, pod, "done"), "inside\nnew 777\ndone\n");
    } finally {
      await cleanup(t.provider, pod);
      await t.close();
    }
  },
});

Deno.test({
  name: "a mount point inside another volume is never made through the pod's symlink",
  ignore: !isRoot,
  fn: async () => {
    const t = await startProvider();
    // A root-owned directory the pod may not write: the old set-up truncated its file, as root.
    const victimDir = await Deno.makeTempDir({ prefix: "vk-victim-" });
    await Deno.writeTextFile(join(victimDir, "f"), "intact\n");
    const user = { runAsUser: 1000, allowPrivilegeEscalation: false };
    const pod = makePod([{
      name: "c",
      image: "x",
      command: ["sh", "-c", "echo started; sleep 60"],
      securityContext: user,
      volumeMounts: [
        { name: "a", mountPath: "/data" },
        { name: "b", mountPath: "/data/sub/f", subPath: "file" },
      ],
    }], {
      volumes: [{ name: "a", emptyDir: {} }, { name: "b", emptyDir: {} }],
      initContainers: [{
        name: "prepare",
        image: "x",
        command: ["sh", "-c", `ln -s ${victimDir} /a/sub && echo mine > /b/file`],
        securityContext: user,
        volumeMounts: [{ name: "a", mountPath: "/a" }, { name: "b", mountPath: "/b" }],
      }],
    });
    try {
      await t.provider.createPod(pod, {});
      const status = await waitFor("the container refused", async () => {
        const p = await t.provider.getPod("default", pod.metadata!.name!, {});
        const c = p?.status?.containerStatuses?.[0];
        const message = c?.state?.terminated?.message ?? c?.lastState?.terminated?.message;
        return (message || c?.state?.running) ? c : undefined;
      });
      assert.equal(await Deno.readTextFile(join(victimDir, "f")), "intact\n");
      const message = status.state?.terminated?.message ?? status.lastState?.terminated?.message;
      assert.match(message ?? "", /refused/, JSON.stringify(status));
    } finally {
      await cleanup(t.provider, pod);
      await t.close();
      await Deno.remove(victimDir, { recursive: true });
    }
  },
});
