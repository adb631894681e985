import assert from "node:assert/strict";
import type { Pod, Secret, Volume } from "kubernetes-types/core/v1.d.ts";
import { isInvalidInput, isTransient } from "../../../provider/mod.ts";
import { PodPaths } from "../../../providers/process/state/state.ts";
import { VolumeSet, type VolumeSource } from "../../../providers/process/volumes/volumes.ts";
import { writeAtomically } from "../../../providers/process/volumes/atomic_writer.ts";

const b64 = (text: string) => btoa(text);

/** A VolumeSet on a temporary pod directory, with Secrets the test changes. */
async function volumeSet(
  pod: Pod,
  secrets: Map<string, Secret> = new Map(),
  hostPath = { enabled: false, allowedPrefixes: [] as string[] },
  dir?: string,
) {
  dir ??= await Deno.makeTempDir({ prefix: "vk-process-volumes-" });
  const source: VolumeSource = {
    getConfigMap: () => Promise.resolve(undefined),
    getSecret: (_ns, name) => Promise.resolve(structuredClone(secrets.get(name))),
    createToken: () => Promise.reject(new Error("no tokens here")),
  };
  const paths = new PodPaths(dir);
  const volumes = new VolumeSet(pod, {
    paths,
    source,
    hostPath,
    tokenExpirationSeconds: 3600,
    allocatable: { cpu: "4", memory: "8Gi" },
    now: () => Date.now(),
  });
  const file = (volume: string, path: string) => `${paths.volume(volume)}/${path}`;
  return {
    volumes,
    read: (volume: string, path: string) => Deno.readTextFile(file(volume, path)),
    mode: async (volume: string, path: string) =>
      ((await Deno.stat(file(volume, path))).mode ?? 0) & 0o7777,
    exists: (volume: string, path: string) =>
      Deno.lstat(file(volume, path)).then(() => true, () => false),
    list: async (volume: string) =>
      (await Array.fromAsync(Deno.readDir(paths.volume(volume)))).map((e) => e.name).sort(),
    [Symbol.asyncDispose]: () => Deno.remove(dir!, { recursive: true }),
  };
}

function podWith(volumes: Volume[], metadata: Pod["metadata"] = {}): Pod {
  return {
    metadata: { namespace: "default", name: "web-1", uid: "u-1", ...metadata },
    spec: {
      containers: [{ name: "c", image: "x", resources: { limits: { cpu: "500m" } } }],
      volumes,
    },
  };
}

Deno.test("a secret volume writes its items with their modes and follows updates", async () => {
  const secrets = new Map<string, Secret>([["creds", {
    kind: "Secret",
    type: "Opaque",
    data: { user: b64("admin"), pass: b64("s3cret"), extra: b64("unused") },
  }]]);
  const pod = podWith([{
    name: "creds",
    secret: {
      secretName: "creds",
      defaultMode: 0o400,
      items: [{ key: "user", path: "conf/user" }, { key: "pass", path: "pass", mode: 0o600 }],
    },
  }]);
  await using v = await volumeSet(pod, secrets);
  await v.volumes.sync(pod);
  assert.equal(await v.read("creds", "conf/user"), "admin");
  assert.equal(await v.read("creds", "pass"), "s3cret");
  assert.equal(await v.mode("creds", "conf/user"), 0o400);
  assert.equal(await v.mode("creds", "pass"), 0o600);
  assert.equal(await v.exists("creds", "extra"), false, "only the listed items");
  assert.ok(v.volumes.isReadOnly("creds"));
  const before = (await v.list("creds")).filter((n) => n.startsWith("..2"));

  secrets.get("creds")!.data!.pass = b64("rotated");
  await v.volumes.sync(pod);
  assert.equal(await v.read("creds", "pass"), "rotated");
  assert.equal(await v.mode("creds", "pass"), 0o600);
  const after = (await v.list("creds")).filter((n) => n.startsWith("..2"));
  assert.equal(after.length, 1, "one version directory");
  assert.notDeepEqual(after, before, "the update is a new version swapped in through ..data");

  delete secrets.get("creds")!.data!.user;
  await assert.rejects(
    v.volumes.sync(pod),
    (err) => isTransient(err) && /no key user/.test(err.message),
  );
  assert.equal(await v.read("creds", "conf/user"), "admin", "a failed update keeps the old files");
});

Deno.test("a secret volume without items holds every key; removed keys go; optional may be missing", async () => {
  // No kind or type: the volume decodes it as a Secret because it asked for one.
  const secrets = new Map<string, Secret>([["all", {
    data: { a: b64("1"), b: b64("2") },
    stringData: { c: "3" },
  }]]);
  const pod = podWith([
    { name: "all", secret: { secretName: "all" } },
    { name: "maybe", secret: { secretName: "absent", optional: true } },
    { name: "must", secret: { secretName: "absent-too" } },
  ]);
  await using v = await volumeSet(pod, secrets);
  await assert.rejects(v.volumes.sync(pod), /secret "absent-too" not found in namespace default/);
  const ok = podWith(pod.spec!.volumes!.slice(0, 2));
  await v.volumes.sync(ok);
  const entries = await v.list("all");
  assert.deepEqual(entries.filter((n) => !n.startsWith("..2")), ["..data", "a", "b", "c"]);
  assert.equal(await v.mode("all", "a"), 0o644, "the default mode");
  assert.deepEqual((await v.list("maybe")).filter((n) => !n.startsWith("..")), []);
  delete secrets.get("all")!.data!.b;
  await v.volumes.sync(ok);
  assert.equal(await v.exists("all", "b"), false);
  assert.equal(await v.read("all", "a"), "1");
});

Deno.test("a downwardAPI volume writes fields and resources with modes, and follows label changes", async () => {
  const volume: Volume = {
    name: "info",
    downwardAPI: {
      defaultMode: 0o444,
      items: [
        { path: "labels", fieldRef: { fieldPath: "metadata.labels" } },
        { path: "meta/name", fieldRef: { fieldPath: "metadata.name" }, mode: 0o600 },
        { path: "tier", fieldRef: { fieldPath: "metadata.labels['tier']" } },
        { path: "annotations", fieldRef: { fieldPath: "metadata.annotations" } },
        {
          path: "cpu_limit",
          resourceFieldRef: { containerName: "c", resource: "limits.cpu", divisor: "1m" },
        },
        { path: "mem_limit", resourceFieldRef: { containerName: "c", resource: "limits.memory" } },
      ],
    },
  };
  const pod = podWith([volume], {
    labels: { tier: "front", app: "web" },
    annotations: { note: 'say "hi"' },
  });
  await using v = await volumeSet(pod);
  await v.volumes.sync(pod);
  assert.equal(await v.read("info", "labels"), 'app="web"\ntier="front"');
  assert.equal(await v.read("info", "meta/name"), "web-1");
  assert.equal(await v.read("info", "tier"), "front");
  assert.equal(await v.read("info", "annotations"), 'note="say \\"hi\\""');
  assert.equal(await v.read("info", "cpu_limit"), "500");
  assert.equal(await v.read("info", "mem_limit"), String(8 * 1024 ** 3), "allocatable stands in");
  assert.equal(await v.mode("info", "labels"), 0o444);
  assert.equal(await v.mode("info", "meta/name"), 0o600);
  assert.ok((await Deno.lstat(`${v.volumes.hostPathOf("info")}/labels`)).isSymlink);

  const relabelled = { ...pod, metadata: { ...pod.metadata, labels: { tier: "back" } } };
  await v.volumes.sync(relabelled);
  assert.equal(await v.read("info", "labels"), 'tier="back"');
  assert.equal(await v.read("info", "tier"), "back");

  const escaping = podWith([{
    name: "bad",
    downwardAPI: { items: [{ path: "../up", fieldRef: { fieldPath: "metadata.name" } }] },
  }]);
  await assert.rejects(
    v.volumes.sync(escaping),
    (err) => isInvalidInput(err) && /'\.\.'/.test(err.message),
  );
});

Deno.test("a secret key that is a path out of the volume is refused, nothing written", async () => {
  // The apiserver refuses such keys; the writer checks anyway, as upstream's AtomicWriter.
  const secrets = new Map<string, Secret>([["evil", {
    data: { fine: b64("1"), "../../escaped": b64("pwned") },
  }]]);
  const pod = podWith([{ name: "evil", secret: { secretName: "evil" } }]);
  await using v = await volumeSet(pod, secrets);
  await assert.rejects(v.volumes.sync(pod), (err) => {
    assert.ok(isInvalidInput(err), String(err));
    assert.match(String(err), /must not contain '\.\.'/);
    return true;
  });
  const podDir = v.volumes.hostPathOf("evil").split("/").slice(0, -2).join("/");
  assert.deepEqual(
    (await Array.fromAsync(Deno.readDir(podDir))).map((e) => e.name).filter((n) => n === "escaped"),
    [],
  );
  assert.equal(await v.exists("evil", "fine"), false);
});

Deno.test("writeAtomically refuses every path that could leave the volume", async () => {
  const dir = await Deno.makeTempDir({ prefix: "vk-atomic-" });
  try {
    const file = (path: string) => ({ path, data: new Uint8Array([1]), mode: 0o644 });
    for (const path of ["../x", "a/../../x", "/etc/x", "..data/x", "", "a//b", "x".repeat(256)]) {
      await assert.rejects(
        writeAtomically(`${dir}/vol`, [file("ok"), file(path)], Date.now()),
        (err) => isInvalidInput(err),
        JSON.stringify(path),
      );
    }
    assert.deepEqual((await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("hostPath allowedPrefixes compare path segments after resolving symlinks", async () => {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "vk-hostpath-" }));
  try {
    await Deno.mkdir(`${root}/allowed`);
    await Deno.mkdir(`${root}/outside`);
    await Deno.mkdir(`${root}/allowed-not`);
    await Deno.mkdir(`${root}/pod`);
    await Deno.symlink(`${root}/outside`, `${root}/allowed/link`);
    const hostPath = { enabled: true, allowedPrefixes: [`${root}/allowed`] };
    const volume = (path: string): Volume => ({
      name: "h",
      hostPath: { path, type: "DirectoryOrCreate" },
    });
    const refused = [
      `${root}/allowed/link/made`, // a symlink under the prefix pointing out of it
      `${root}/allowed/../outside/made`,
      `${root}/allowed-not/made`,
    ];
    for (const path of refused) {
      const pod = podWith([volume(path)]);
      const v = await volumeSet(pod, new Map(), hostPath, `${root}/pod`);
      const err = await v.volumes.sync(pod).then(() => undefined, (e) => e);
      assert.ok(isInvalidInput(err), `${path}: ${err}`);
    }
    assert.deepEqual(await Array.fromAsync(Deno.readDir(`${root}/outside`)), []);
    assert.deepEqual(await Array.fromAsync(Deno.readDir(`${root}/allowed-not`)), []);
    const inside = podWith([volume(`${root}/allowed/data`)]);
    await (await volumeSet(inside, new Map(), hostPath, `${root}/pod`)).volumes.sync(inside);
    assert.ok((await Deno.stat(`${root}/allowed/data`)).isDirectory);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
