import assert from "node:assert/strict";
import type { PersistentVolume, PersistentVolumeClaim, Pod } from "kubernetes-types/core/v1.d.ts";
import { isInvalidInput, isTransient } from "../../../provider/mod.ts";
import { PodPaths } from "../../../providers/process/state/state.ts";
import { VolumeSet, type VolumeSource } from "../../../providers/process/volumes/volumes.ts";

/**
 * A pod with claim volume `data` (claim as given, its PV from `pvIn(allowed prefix)`) on a
 * temporary pod directory.
 */
async function claimSetup(
  claim: PersistentVolumeClaim | undefined,
  pvIn?: (allowed: string) => PersistentVolume,
) {
  const dir = await Deno.makeTempDir({ prefix: "vk-process-claims-" });
  const allowed = `${dir}/pvs`;
  await Deno.mkdir(allowed);
  const pv = pvIn?.(allowed);
  const source: VolumeSource = {
    getConfigMap: () => Promise.resolve(undefined),
    getSecret: () => Promise.resolve(undefined),
    createToken: () => Promise.reject(new Error("no tokens here")),
    getPersistentVolumeClaim: (ns, name) =>
      Promise.resolve(
        ns === "default" && name === claim?.metadata?.name ? structuredClone(claim) : undefined,
      ),
    getPersistentVolume: (name) =>
      Promise.resolve(name === pv?.metadata?.name ? structuredClone(pv) : undefined),
  };
  const pod: Pod = {
    metadata: { namespace: "default", name: "db-0", uid: "u-1" },
    spec: {
      containers: [{ name: "c", image: "x" }],
      volumes: [{ name: "data", persistentVolumeClaim: { claimName: "data-db-0" } }],
    },
  };
  const paths = new PodPaths(`${dir}/pod`);
  const volumes = new VolumeSet(pod, {
    paths,
    source,
    hostPath: { enabled: false, allowedPrefixes: [allowed] },
    tokenExpirationSeconds: 3600,
    allocatable: {},
    now: () => Date.now(),
  });
  return {
    pod,
    volumes,
    dir,
    allowed,
    paths,
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  };
}

const bound = (volumeName: string): PersistentVolumeClaim => ({
  metadata: { name: "data-db-0", namespace: "default" },
  spec: { volumeName },
  status: { phase: "Bound" },
});

Deno.test("a claim volume is the bound hostPath PersistentVolume's directory, even with hostPath volumes off", async () => {
  await using t = await claimSetup(
    bound("pv-1"),
    (allowed) => ({ metadata: { name: "pv-1" }, spec: { hostPath: { path: `${allowed}/pv-1` } } }),
  );
  const pvDir = `${t.allowed}/pv-1`;
  await Deno.mkdir(pvDir);
  await Deno.writeTextFile(`${pvDir}/kept`, "from before");
  await t.volumes.sync(t.pod);
  const mounted = t.volumes.hostPathOf("data");
  assert.equal(await Deno.readTextFile(`${mounted}/kept`), "from before");
  await Deno.writeTextFile(`${mounted}/new`, "written by the pod");
  assert.equal(await Deno.readTextFile(`${pvDir}/new`), "written by the pod", "data is in the PV");
  assert.equal(t.volumes.isReadOnly("data"), false);
  await Deno.remove(t.paths.dir, { recursive: true });
  assert.equal(await Deno.readTextFile(`${pvDir}/new`), "written by the pod", "survives the pod");
});

Deno.test("a claim volume waits while the claim is missing or unbound", async () => {
  await using missing = await claimSetup(undefined);
  await assert.rejects(missing.volumes.sync(missing.pod), (err) => {
    assert.ok(isTransient(err));
    assert.match(String(err), /PersistentVolumeClaim default\/data-db-0 not found/);
    return true;
  });
  await using pending = await claimSetup({
    metadata: { name: "data-db-0" },
    status: { phase: "Pending" },
  });
  await assert.rejects(pending.volumes.sync(pending.pod), (err) => {
    assert.ok(isTransient(err));
    assert.match(String(err), /not bound yet \(phase Pending\)/);
    return true;
  });
});

Deno.test("a claim volume is refused outside hostPath.allowedPrefixes and for volumes that are not host directories", async () => {
  const elsewhere = await Deno.makeTempDir({ prefix: "vk-process-elsewhere-" });
  try {
    await using outside = await claimSetup(
      bound("pv-2"),
      () => ({ metadata: { name: "pv-2" }, spec: { local: { path: elsewhere } } }),
    );
    await assert.rejects(outside.volumes.sync(outside.pod), (err) => {
      assert.ok(isInvalidInput(err));
      assert.match(String(err), /outside hostPath.allowedPrefixes/);
      return true;
    });
    await using nfs = await claimSetup(
      bound("pv-3"),
      () => ({ metadata: { name: "pv-3" }, spec: { nfs: { server: "127.0.0.1", path: "/x" } } }),
    );
    await assert.rejects(nfs.volumes.sync(nfs.pod), (err) => {
      assert.ok(isInvalidInput(err));
      assert.match(String(err), /neither hostPath nor local/);
      return true;
    });
  } finally {
    await Deno.remove(elsewhere, { recursive: true });
  }
});
