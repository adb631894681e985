import assert from "node:assert/strict";
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import { resolveIdentity, setprivArgv } from "../../../providers/process/launch/identity.ts";
import { cleanup, collector, makePod, readAll, startProvider, waitFor } from "./_helpers.ts";

const root = { uid: 0, gid: 0 };
/** CapBnd of the containerd/Docker default set (CHOWN ... AUDIT_WRITE). */
const DEFAULT_MASK = "00000000a80425fb";
const isRoot = Deno.uid() === 0;

/** The status of the pod's first container once `check` holds. */
async function statusWhen(
  t: Awaited<ReturnType<typeof startProvider>>,
  pod: Pod,
  check: (s: NonNullable<Pod["status"]>) => boolean,
) {
  return await waitFor("container status", async () => {
    const p = await t.provider.getPod("default", pod.metadata!.name!, {});
    return p?.status && check(p.status) && p.status.containerStatuses?.[0];
  });
}

Deno.test("the container's runAsUser, runAsGroup and runAsNonRoot win over the pod's", () => {
  const pod = makePod([], {
    securityContext: { runAsUser: 1000, runAsGroup: 1000, supplementalGroups: [5], fsGroup: 6 },
  });
  const c: Container = { name: "c", securityContext: { runAsUser: 2000 } };
  const result = resolveIdentity(pod, c, root);
  assert.ok(result.ok);
  assert.deepEqual(
    { uid: result.identity.uid, gid: result.identity.gid, groups: result.identity.groups },
    { uid: 2000, gid: 1000, groups: [5, 6] },
  );
  // runAsUser without runAsGroup: the user's group from passwd, else the gid of its number.
  const hostIds = { users: new Map([[7, { name: "seven", gid: 70 }]]), groups: new Map() };
  const alone = (runAsUser: number) =>
    resolveIdentity(makePod([]), { name: "c", securityContext: { runAsUser } }, root, hostIds);
  const [known, unknown] = [alone(7), alone(2345)];
  assert.ok(known.ok && known.identity.gid === 70);
  assert.ok(unknown.ok && unknown.identity.gid === 2345, "not gid 0, the host's root group");
});

Deno.test("runAsNonRoot without a non-zero uid is refused with the kubelet's messages", () => {
  const pod = makePod([], { securityContext: { runAsNonRoot: true } });
  const { name, uid } = pod.metadata!;
  const image = resolveIdentity(pod, { name: "c" }, root);
  assert.deepEqual(image, {
    ok: false,
    message:
      `container has runAsNonRoot and image will run as root (pod: "${name}_default(${uid})", container: c)`,
  });
  const zero = resolveIdentity(pod, { name: "c", securityContext: { runAsUser: 0 } }, root);
  assert.deepEqual(zero, {
    ok: false,
    message:
      `container's runAsUser breaks non-root policy (pod: "${name}_default(${uid})", container: c)`,
  });
  assert.ok(resolveIdentity(pod, { name: "c", securityContext: { runAsUser: 5 } }, root).ok);
});

Deno.test("capabilities: the runtime's default set, drop ALL, add, and a bad name named", () => {
  const caps = (capabilities?: { add?: string[]; drop?: string[] }, privileged?: boolean) => {
    const r = resolveIdentity(makePod([]), {
      name: "c",
      securityContext: { capabilities, privileged },
    }, root);
    return r.ok ? r.identity.capabilities : r.message;
  };
  assert.equal((caps() as string[]).length, 14);
  assert.ok(!(caps() as string[]).includes("SYS_ADMIN"));
  assert.deepEqual(caps({ drop: ["ALL"], add: ["NET_BIND_SERVICE", "CAP_SYS_TIME"] }), [
    "NET_BIND_SERVICE",
    "SYS_TIME",
  ]);
  assert.deepEqual(caps({ drop: ["ALL"] }), []);
  assert.equal(caps(undefined, true), "all");
  assert.match(caps({ add: ["FLY"] }) as string, /capability FLY .* is not a Linux capability/);
  const argv = setprivArgv(
    { uid: 0, gid: 0, groups: [], capabilities: [], noNewPrivs: true },
    root,
  );
  assert.ok(argv.ok);
  assert.ok(argv.argv.includes("--bounding-set=-all") && argv.argv.includes("--nnp"));
});

Deno.test({
  name: "a pod's processes, exec sessions and probes run as its runAsUser with its groups",
  ignore: !isRoot,
  fn: async () => {
    const t = await startProvider();
    const report = 'echo "$(id -u) $(id -g) $(id -G)"; grep -E "^Cap(Eff|Bnd)" /proc/self/status';
    const pod = makePod([{
      name: "c",
      image: "x",
      command: ["sh", "-c", `${report}; sleep 30`],
      readinessProbe: {
        exec: { command: ["sh", "-c", 'test "$(id -u)" = 1000'] },
        periodSeconds: 1,
      },
    }], { securityContext: { runAsUser: 1000, runAsGroup: 3000, supplementalGroups: [4000] } });
    const ref = { namespace: "default", pod: pod.metadata!.name!, container: "c" };
    try {
      await t.provider.createPod(pod, {});
      const logs = await waitFor("identity printed", async () => {
        const text = await readAll(await t.provider.getContainerLogs(ref, {}));
        return text.includes("CapBnd") && text;
      });
      assert.equal(
        logs,
        `1000 3000 3000 4000\nCapEff:\t0000000000000000\nCapBnd:\t${DEFAULT_MASK}\n`,
      );
      const [out, err] = [collector(), collector()];
      const code = await t.provider.runInContainer(ref, {
        command: ["sh", "-c", "id -u; cat /proc/1/environ"],
        io: { tty: false, stdout: out.writable, stderr: err.writable },
      });
      assert.equal(code, 1, "exec may not read another user's environment");
      assert.equal(out.text(), "1000\n");
      assert.match(err.text(), /Permission denied/);
      const status = await statusWhen(t, pod, (s) => s.containerStatuses?.[0]?.ready === true);
      assert.equal(status.ready, true, "the exec probe ran as uid 1000");
    } finally {
      await cleanup(t.provider, pod);
      await t.close();
    }
  },
});

Deno.test({
  name: "a root container gets the runtime's default capabilities, or only those it adds",
  ignore: !isRoot,
  fn: async () => {
    const t = await startProvider();
    const show = ["sh", "-c", "grep -E '^Cap(Eff|Bnd)' /proc/self/status; sleep 30"];
    const pod = makePod([
      { name: "plain", image: "x", command: show },
      {
        name: "narrow",
        image: "x",
        command: show,
        securityContext: { capabilities: { drop: ["ALL"], add: ["NET_BIND_SERVICE"] } },
      },
    ]);
    const log = (container: string) =>
      waitFor(`${container} output`, async () => {
        const ref = { namespace: "default", pod: pod.metadata!.name!, container };
        const text = await readAll(await t.provider.getContainerLogs(ref, {}));
        return text.includes("CapBnd") && text;
      });
    try {
      await t.provider.createPod(pod, {});
      assert.equal(await log("plain"), `CapEff:\t${DEFAULT_MASK}\nCapBnd:\t${DEFAULT_MASK}\n`);
      assert.equal(
        await log("narrow"),
        "CapEff:\t0000000000000400\nCapBnd:\t0000000000000400\n",
      );
    } finally {
      await cleanup(t.provider, pod);
      await t.close();
    }
  },
});

Deno.test("runAsNonRoot and readOnlyRootFilesystem keep the container waiting with the reason", async () => {
  const t = await startProvider({});
  const pod = makePod([
    { name: "c", image: "x", command: ["sleep", "30"], securityContext: { runAsNonRoot: true } },
    {
      name: "ro",
      image: "x",
      command: ["sleep", "30"],
      securityContext: { readOnlyRootFilesystem: true },
    },
  ]);
  try {
    await t.provider.createPod(pod, {});
    const status = await waitFor("both waiting", async () => {
      const p = await t.provider.getPod("default", pod.metadata!.name!, {});
      const s = p?.status?.containerStatuses;
      return s?.every((c) => c.state?.waiting?.message) && s;
    });
    const [c, ro] = status;
    assert.equal(c.state?.waiting?.reason, "CreateContainerConfigError");
    if (isRoot) assert.match(c.state!.waiting!.message!, /runAsNonRoot and image will run as root/);
    assert.equal(ro.state?.waiting?.reason, "CreateContainerError");
    assert.match(ro.state!.waiting!.message!, /readOnlyRootFilesystem cannot be honoured/);
  } finally {
    await cleanup(t.provider, pod);
    await t.close();
  }
});
