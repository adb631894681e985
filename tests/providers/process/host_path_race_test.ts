/**
 * A hostPath under `hostPath.allowedPrefixes` stays under it when a pod swaps a symlink into
 * its path after the check: `DirectoryOrCreate` makes nothing outside the prefix, and the view
 * binds nothing outside it.
 * @module
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { join } from "node:path";
import { probeMountNamespace } from "../../../providers/process/launch/mount_ns.ts";
import { PodPaths } from "../../../providers/process/state/state.ts";
import { VolumeSet } from "../../../providers/process/volumes/volumes.ts";
import { cleanup, makePod, readAll, startProvider, waitFor } from "./_helpers.ts";

const isRoot = Deno.uid() === 0;
const namespaceSupport = isRoot ? await probeMountNamespace() : { ok: false };

/** An allowed prefix, a directory outside it, and a pod directory, all resolved. */
async function dirs() {
  const top = await Deno.realPath(await Deno.makeTempDir({ prefix: "vk-hostpath-race-" }));
  const allowed = join(top, "allowed"), outside = join(top, "outside");
  await Deno.mkdir(allowed, { mode: 0o777 });
  await Deno.chmod(allowed, 0o777);
  await Deno.mkdir(outside);
  return {
    top,
    allowed,
    outside,
    [Symbol.asyncDispose]: () => Deno.remove(top, { recursive: true }),
  };
}

function hostPathPod(path: string, type: string): Pod {
  return {
    metadata: { namespace: "default", name: "h", uid: "u-1" },
    spec: { containers: [], volumes: [{ name: "h", hostPath: { path, type } }] },
  };
}

/** A VolumeSet's context with `allowed` the only prefix. */
function context(top: string, allowed: string) {
  return {
    paths: new PodPaths(join(top, "pod")),
    hostPath: { enabled: true, allowedPrefixes: [allowed] },
    tokenExpirationSeconds: 3600,
    allocatable: {},
    now: () => Date.now(),
  };
}

Deno.test("DirectoryOrCreate and FileOrCreate are made with the kubelet's modes under the prefix", async () => {
  await using d = await dirs();
  await Deno.mkdir(`${d.allowed}/c`);
  const made: [string, string][] = [
    [`${d.allowed}/a/b`, "DirectoryOrCreate"],
    [`${d.allowed}/c/f`, "FileOrCreate"],
  ];
  for (const [path, type] of made) {
    const pod = hostPathPod(path, type);
    await new VolumeSet(pod, context(d.top, d.allowed)).sync(pod);
  }
  assert.equal((await Deno.stat(`${d.allowed}/a`)).mode! & 0o7777, 0o755);
  assert.equal((await Deno.stat(`${d.allowed}/a/b`)).mode! & 0o7777, 0o755);
  const file = await Deno.stat(`${d.allowed}/c/f`);
  assert.ok(file.isFile);
  assert.equal(file.mode! & 0o7777, 0o644);
});

Deno.test({
  name:
    "a symlink swapped into a DirectoryOrCreate hostPath's path makes nothing outside the prefix",
  ignore: !isRoot,
  fn: async () => {
    await using d = await dirs();
    // Another pod's process (here a loop) points allowed/x, a symlink, now at a directory
    // inside the prefix (which the check accepts), now at one outside, as fast as it can.
    await Deno.mkdir(`${d.allowed}/inside`);
    await Deno.symlink(`${d.allowed}/inside`, `${d.allowed}/x`);
    const flip =
      `const [x, a, b] = Deno.args; for (;;) for (const to of [a, b]) { try { Deno.symlinkSync(to, x + ".new"); Deno.renameSync(x + ".new", x); } catch { /* raced */ } }`;
    const flipper = new Deno.Command(Deno.execPath(), {
      args: ["eval", flip, `${d.allowed}/x`, `${d.allowed}/inside`, d.outside],
      stdout: "null",
      stderr: "null",
    }).spawn();
    let made = 0;
    try {
      for (let i = 0; i < 400; i++) {
        const pod = hostPathPod(`${d.allowed}/x/new-${i}`, "DirectoryOrCreate");
        await new VolumeSet(pod, context(d.top, d.allowed)).sync(pod).then(() => made++, () => {});
      }
    } finally {
      flipper.kill("SIGKILL");
      await flipper.status;
    }
    const escaped = [...Deno.readDirSync(d.outside)].map((e) => e.name);
    assert.deepEqual(escaped, [], `made outside the allowed prefix: ${escaped.join(", ")}`);
    // Not all refused: the walk goes through the symlink's resolved path, inside.
    assert.ok(made > 0, "no DirectoryOrCreate was made at all");
  },
});

Deno.test({
  name:
    "a hostPath whose directory became a symlink out of the prefix after the check is not bound",
  ignore: !namespaceSupport.ok,
  fn: async () => {
    await using d = await dirs();
    const secret = `outside-${crypto.randomUUID()}`;
    await Deno.writeTextFile(`${d.outside}/secret`, secret);
    await Deno.mkdir(`${d.allowed}/x`, { mode: 0o777 });
    await Deno.chmod(`${d.allowed}/x`, 0o777);
    const t = await startProvider({
      config: {
        mountNamespace: "required",
        hostPath: { enabled: true, allowedPrefixes: [d.allowed] },
      },
    });
    const user = { runAsUser: 1000, allowPrivilegeEscalation: false };
    // The volumes are checked before any container starts; the init container then swaps a
    // symlink in, the main container's view is built after.
    const pod = makePod([{
      name: "c",
      image: "x",
      command: ["sh", "-c", "cat /data/secret; echo; echo done; sleep 30"],
      securityContext: user,
      volumeMounts: [{ name: "data", mountPath: "/data" }],
    }], {
      volumes: [
        { name: "parent", hostPath: { path: d.allowed, type: "Directory" } },
        { name: "data", hostPath: { path: `${d.allowed}/x`, type: "Directory" } },
      ],
      initContainers: [{
        name: "swap",
        image: "x",
        command: ["sh", "-c", `rmdir /parent/x && ln -s ${d.outside} /parent/x`],
        securityContext: user,
        volumeMounts: [{ name: "parent", mountPath: "/parent" }],
      }],
    });
    const ref = { namespace: "default", pod: pod.metadata!.name!, container: "c" };
    try {
      await t.provider.createPod(pod, {});
      const status = await waitFor("the main container refused, or its report", async () => {
        const p = await t.provider.getPod("default", ref.pod, {});
        const c = p?.status?.containerStatuses?.[0];
        const message = c?.state?.terminated?.message ?? c?.lastState?.terminated?.message;
        const text = c?.state?.running
          ? await readAll(await t.provider.getContainerLogs(ref, {})).catch(() => "")
          : "";
        return (message || text.includes("done")) ? c : undefined;
      });
      const logs = await readAll(await t.provider.getContainerLogs(ref, {})).catch(() => "");
      assert.ok(!logs.includes(secret), `the container read outside the prefix: ${logs}`);
      const message = status.state?.terminated?.message ?? status.lastState?.terminated?.message;
      assert.match(message ?? "", /refused/, JSON.stringify(status));
    } finally {
      await cleanup(t.provider, pod);
      await t.close();
    }
  },
});

Deno.test("FileOrCreate whose directory is missing makes nothing and says so", async () => {
  await using d = await dirs();
  const pod = hostPathPod(`${d.allowed}/missing/f`, "FileOrCreate");
  await assert.rejects(
    new VolumeSet(pod, context(d.top, d.allowed)).sync(pod),
    /its directory .*\/missing does not exist \(FileOrCreate makes only the file\)/,
  );
  assert.equal(
    await Deno.stat(`${d.allowed}/missing`).then(() => "made", () => "not made"),
    "not made",
  );
});
