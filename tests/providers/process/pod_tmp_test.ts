/**
 * `/tmp`, `/var/tmp` and `/dev/shm` are not the host's in a container's view: `/tmp` and
 * `/var/tmp` are the container's own (as in a container's writable layer), `/dev/shm` the pod's
 * (as the pod sandbox's), kept in the pod's directory and gone with it. Another pod, even of the
 * same uid, reads nothing there.
 * @module
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { join } from "node:path";
import { probeMountNamespace } from "../../../providers/process/launch/mount_ns.ts";
import { cleanup, makePod, readAll, startProvider, waitFor } from "./_helpers.ts";

const isRoot = Deno.uid() === 0;
const namespaceSupport = isRoot ? await probeMountNamespace() : { ok: false };
const sameUser = { runAsUser: 1000, runAsGroup: 1000 };

function inNamespace(pod: Pod, namespace: string): Pod {
  pod.metadata!.namespace = namespace;
  return pod;
}

async function logsWith(
  t: Awaited<ReturnType<typeof startProvider>>,
  pod: Pod,
  container: string,
  marker: string,
): Promise<string> {
  const ref = { namespace: pod.metadata!.namespace!, pod: pod.metadata!.name!, container };
  return await waitFor(`${container}'s logs with ${marker}`, async () => {
    const text = await readAll(await t.provider.getContainerLogs(ref, {}));
    return text.includes(marker) && text;
  });
}

Deno.test({
  name: "another tenant's pod of the same uid cannot read a pod's /tmp, /var/tmp or /dev/shm",
  ignore: !namespaceSupport.ok,
  fn: async () => {
    const t = await startProvider({ config: { mountNamespace: "required" } });
    const name = `vk-private-${crypto.randomUUID()}`;
    const files = ["/tmp", "/var/tmp", "/dev/shm"].map((dir) => `${dir}/${name}`);
    const writer = inNamespace(
      makePod([{
        name: "a",
        image: "x",
        command: [
          "sh",
          "-c",
          `umask 077; for f in ${
            files.join(" ")
          }; do echo secret > "$f"; done; echo written; sleep 60`,
        ],
      }], { securityContext: sameUser }),
      "tenant-a",
    );
    const reader = inNamespace(
      makePod([{
        name: "b",
        image: "x",
        command: [
          "sh",
          "-c",
          `for f in ${
            files.join(" ")
          }; do if cat "$f" 2>/dev/null; then echo "read $f"; else echo "no $f"; fi; done; echo done`,
        ],
      }], { securityContext: sameUser, restartPolicy: "Never" }),
      "tenant-b",
    );
    try {
      await t.provider.createPod(writer, {});
      await logsWith(t, writer, "a", "written");
      await t.provider.createPod(reader, {});
      const log = await logsWith(t, reader, "b", "done");
      assert.equal(log, files.map((f) => `no ${f}\n`).join("") + "done\n");
      // Nor did the writer's files land on the host.
      for (const file of files) {
        assert.equal(await Deno.stat(file).then(() => "on the host", () => "not"), "not", file);
      }
    } finally {
      await cleanup(t.provider, reader);
      await cleanup(t.provider, writer);
      await t.close();
      for (const file of files) await Deno.remove(file).catch(() => {});
    }
  },
});

Deno.test({
  name:
    "containers of a pod share its /dev/shm but not /tmp or /var/tmp; the pod's deletion removes them",
  ignore: !namespaceSupport.ok,
  fn: async () => {
    const t = await startProvider({ config: { mountNamespace: "required" } });
    const name = `vk-shared-${crypto.randomUUID()}`;
    const pod = makePod([
      {
        name: "one",
        image: "x",
        command: [
          "sh",
          "-c",
          `echo one > /dev/shm/${name}; echo one > /tmp/${name}; echo one > /var/tmp/${name}; echo written; sleep 60`,
        ],
      },
      {
        name: "two",
        image: "x",
        command: [
          "sh",
          "-c",
          [
            `until [ -e /dev/shm/${name} ]; do sleep 0.1; done`,
            `echo "shm: $(cat /dev/shm/${name})"`,
            `if [ -e /tmp/${name} ]; then echo "tmp shared"; else echo "tmp own"; fi`,
            `if [ -e /var/tmp/${name} ]; then echo "var/tmp shared"; else echo "var/tmp own"; fi`,
            `echo "tmp mode $(stat -c %a /tmp) shm mode $(stat -c %a /dev/shm)"`,
            "echo done; sleep 60",
          ].join("\n"),
        ],
      },
    ], { securityContext: sameUser });
    const podDir = join(
      t.stateDir,
      "pods",
      `default_${pod.metadata!.name}_${pod.metadata!.uid}`,
    );
    try {
      await t.provider.createPod(pod, {});
      const log = await logsWith(t, pod, "two", "done");
      assert.equal(
        log,
        "shm: one\ntmp own\nvar/tmp own\ntmp mode 1777 shm mode 1777\ndone\n",
      );
      assert.equal(await Deno.readTextFile(join(podDir, "shm", name)), "one\n");
      await cleanup(t.provider, pod);
      assert.equal(await Deno.stat(podDir).then(() => "kept", () => "removed"), "removed");
    } finally {
      await cleanup(t.provider, pod);
      await t.close();
      for (const dir of ["/tmp", "/var/tmp", "/dev/shm"]) {
        await Deno.remove(`${dir}/${name}`).catch(() => {});
      }
    }
  },
});
