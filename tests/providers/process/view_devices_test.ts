/**
 * A container's view has a `/dev` of its own, as a runc container has: the default devices
 * (null, zero, full, random, urandom, tty), a devpts of its own and `/dev/shm`; none of the
 * host's other devices (its disks, `/dev/kmsg`, `/dev/mem`), even for a root container, and no
 * other session's terminal.
 * @module
 */
import assert from "node:assert/strict";
import { probeMountNamespace } from "../../../providers/process/launch/mount_ns.ts";
import { cleanup, collector, makePod, readAll, startProvider, waitFor } from "./_helpers.ts";

const isRoot = Deno.uid() === 0;
const namespaceSupport = isRoot ? await probeMountNamespace() : { ok: false };

/** The host's device nodes outside runc's default set (block and char devices). */
function foreignDevices(): string[] {
  const defaults = new Set(["null", "zero", "full", "random", "urandom", "tty", "ptmx"]);
  return [...Deno.readDirSync("/dev")].filter((e) => !defaults.has(e.name)).filter((e) => {
    const info = Deno.lstatSync(`/dev/${e.name}`);
    return info.isBlockDevice || info.isCharDevice;
  }).map((e) => `/dev/${e.name}`);
}

Deno.test({
  name: "a root container's /dev holds runc's default devices and none of the host's others",
  ignore: !namespaceSupport.ok,
  fn: async () => {
    const foreign = foreignDevices();
    assert.ok(foreign.length > 0, "the host has a device outside the default set to look for");
    const t = await startProvider({ config: { mountNamespace: "required" } });
    const pod = makePod([{
      name: "c",
      image: "x",
      command: [
        "sh",
        "-c",
        [
          `for d in ${foreign.join(" ")}; do if [ -e "$d" ]; then echo "host device $d"; fi; done`,
          `echo "dev: $(ls /dev | tr '\\n' ' ')"`,
          `echo "pts: $(ls /dev/pts | tr '\\n' ' ')"`,
          "echo x > /dev/null && echo 'null writable'",
          `echo "zero gives $(head -c 3 /dev/zero | wc -c) bytes"`,
          `echo "urandom gives $(head -c 5 /dev/urandom | wc -c) bytes"`,
          "echo shared > /dev/shm/f && echo 'shm writable'",
          "echo done",
        ].join("\n"),
      ],
    }], { restartPolicy: "Never" });
    const ref = { namespace: "default", pod: pod.metadata!.name!, container: "c" };
    try {
      await t.provider.createPod(pod, {});
      const log = await waitFor("the container's report", async () => {
        const text = await readAll(await t.provider.getContainerLogs(ref, {}));
        return text.includes("done") && text;
      });
      assert.doesNotMatch(log, /host device/, log);
      const dev = /^dev: (.*)$/m.exec(log)?.[1].trim().split(" ");
      // What exists of runc's default devices, its links, pts and shm: nothing else.
      const expected = ["null", "zero", "full", "random", "urandom", "tty"]
        .filter((name) => {
          try {
            return Deno.statSync(`/dev/${name}`).isCharDevice;
          } catch {
            return false;
          }
        })
        .concat(["fd", "ptmx", "pts", "shm", "stderr", "stdin", "stdout"]).sort();
      assert.deepEqual(dev, expected);
      // A new devpts instance: no other session's terminal.
      assert.match(log, /^pts: ptmx $/m);
      assert.match(log, /null writable\nzero gives 3 bytes\nurandom gives 5 bytes\nshm writable/);
    } finally {
      await cleanup(t.provider, pod);
      await t.close();
    }
  },
});

Deno.test({
  name: "kubectl exec -t still gets a terminal in a container with its own /dev",
  ignore: !namespaceSupport.ok,
  fn: async () => {
    const t = await startProvider({ config: { mountNamespace: "required" } });
    const pod = makePod([{ name: "c", image: "x", command: ["sleep", "30"] }]);
    const ref = { namespace: "default", pod: pod.metadata!.name!, container: "c" };
    try {
      await t.provider.createPod(pod, {});
      await waitFor("the container running", async () => {
        const p = await t.provider.getPod("default", ref.pod, {});
        return !!p?.status?.containerStatuses?.[0]?.state?.running;
      });
      const out = collector();
      const code = await t.provider.runInContainer(ref, {
        // The session's fds are a terminal; /dev/tty opens as the controlling terminal; and the
        // terminal is the view's, found by name (`tty`, which tmux and ssh-like tools rely on).
        command: [
          "sh",
          "-c",
          "[ -t 0 ] && [ -t 1 ] && echo terminal; echo via-tty > /dev/tty; " +
          'echo "name=$(tty)"; [ -e "$(tty)" ] && echo found-in-view',
        ],
        io: { stdout: out.writable, tty: true },
      });
      assert.equal(code, 0, out.text());
      assert.match(out.text(), /terminal\r?\n/);
      assert.match(out.text(), /via-tty/);
      assert.match(out.text(), /name=\/dev\/pts\/\d+/, out.text());
      assert.match(out.text(), /found-in-view/);
    } finally {
      await cleanup(t.provider, pod);
      await t.close();
    }
  },
});
