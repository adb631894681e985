/**
 * Attacks through the host's ids (issue 61, item 3): there is no user namespace, so a pod that
 * names a host group or user gets its files. Each pod tries to read what that id opens; the node
 * runs with the default allowlist (config `allowedIds`), so each is refused with
 * `CreateContainerConfigError` naming the field, and nothing of it runs. An id inside the
 * allowlist still runs.
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Container, Pod, PodSecurityContext } from "kubernetes-types/core/v1.d.ts";
import { processConfigSchema } from "../../../providers/process/config.ts";
import { cleanup, makePod, readAll, startProvider, waitFor } from "./_helpers.ts";

const isRoot = Deno.uid() === 0;

/** The host's `name → id` of /etc/group or /etc/passwd (login users: those with a shell). */
function hostIds(file: "group" | "passwd", loginOnly = false): Map<string, number> {
  const ids = new Map<string, number>();
  for (const line of Deno.readTextFileSync(`/etc/${file}`).split("\n")) {
    const f = line.split(":");
    if (f.length < 3 || !/^\d+$/.test(f[2])) continue;
    if (loginOnly && (Number(f[2]) < 1000 || /(nologin|false|sync)$/.test(f[6] ?? ""))) continue;
    ids.set(f[0], Number(f[2]));
  }
  return ids;
}

const shadowGid = hostIds("group").get("shadow");
const [loginUser] = [...hostIds("passwd", true)].filter(([, uid]) => uid !== 65534);

/**
 * The node's default allowlist, given explicitly: the test helper lists uid 1000 for the other
 * tests. A provider from before `allowedIds` takes the pod's ids as given (the attack works).
 */
const config = "allowedIds" in processConfigSchema.shape
  ? { allowedIds: { uids: ["1000-65535"], gids: ["1000-65535"] } }
  : {};

/**
 * Runs a pod whose container `c` runs `script` as `sc`; resolves with its first container's
 * status once it waits with a message or has printed "done", and with its log.
 */
async function attempt(
  script: string,
  podSc: PodSecurityContext,
  containerSc: Container["securityContext"] = {},
): Promise<{ status: NonNullable<Pod["status"]>["containerStatuses"]; log: string }> {
  const t = await startProvider({ config });
  const pod = makePod([{
    name: "c",
    image: "x",
    command: ["sh", "-c", `${script}; echo done; sleep 30`],
    securityContext: containerSc,
  }], { securityContext: podSc });
  const ref = { namespace: "default", pod: pod.metadata!.name!, container: "c" };
  const logOf = async () => {
    try {
      return await readAll(await t.provider.getContainerLogs(ref, {}));
    } catch {
      return ""; // never started: no log
    }
  };
  try {
    await t.provider.createPod(pod, {});
    return await waitFor("the container refused or done", async () => {
      const status = (await t.provider.getPod("default", ref.pod, {}))?.status?.containerStatuses;
      if (status?.[0]?.state?.waiting?.message) return { status, log: await logOf() };
      const log = status?.[0]?.state?.running ? await logOf() : "";
      return log.includes("done") && { status, log };
    });
  } finally {
    await cleanup(t.provider, pod);
    await t.close();
  }
}

/** Asserts the container waits with CreateContainerConfigError naming `field`, having run nothing. */
function assertRefused(
  result: Awaited<ReturnType<typeof attempt>>,
  field: RegExp,
): void {
  const state = result.status?.[0]?.state;
  assert.equal(
    state?.waiting?.reason,
    "CreateContainerConfigError",
    `the pod ran and printed: ${JSON.stringify(result.log)}`,
  );
  assert.match(state!.waiting!.message!, field);
  assert.equal(result.log, "", "nothing of the container ran");
}

const readShadow = "cat /etc/shadow | head -c 5";

Deno.test({
  name: "a restricted pod cannot join the host's shadow group through supplementalGroups",
  ignore: !isRoot || shadowGid === undefined,
  fn: async () => {
    const result = await attempt(readShadow, {
      runAsUser: 2000,
      runAsGroup: 2000,
      runAsNonRoot: true,
      supplementalGroups: [shadowGid!],
    }, { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } });
    assertRefused(
      result,
      new RegExp(
        `spec\\.securityContext\\.supplementalGroups: gid ${shadowGid} is the host's group shadow`,
      ),
    );
  },
});

Deno.test({
  name: "a pod cannot take the host's shadow group as its runAsGroup or fsGroup",
  ignore: !isRoot || shadowGid === undefined,
  fn: async () => {
    const asGroup = await attempt(readShadow, {}, { runAsUser: 2000, runAsGroup: shadowGid! });
    assertRefused(asGroup, /container c: securityContext\.runAsGroup: gid \d+ is the host's group/);
    const fsGroup = await attempt(readShadow, { runAsUser: 2000, fsGroup: shadowGid! });
    assertRefused(fsGroup, /spec\.securityContext\.fsGroup: gid \d+ is the host's group shadow/);
  },
});

/** A file only `uid` may read, in a directory anyone may enter; removed by the caller. */
async function privateFile(uid: number): Promise<{ dir: string; file: string }> {
  const dir = await Deno.makeTempDir({ prefix: "vk-host-id-" });
  await Deno.chmod(dir, 0o755);
  const file = join(dir, "private");
  await Deno.writeTextFile(file, "private-data\n", { mode: 0o600 });
  await Deno.chown(file, uid, uid);
  return { dir, file };
}

Deno.test({
  name: "a pod cannot run as a host system user or a login user and read their files",
  ignore: !isRoot,
  fn: async () => {
    const users: [string, number][] = [["daemon", 1], ...(loginUser ? [loginUser] : [])];
    for (const [name, uid] of users) {
      const { dir, file } = await privateFile(uid);
      try {
        const result = await attempt(`cat ${file}`, { runAsUser: uid, runAsGroup: 2000 });
        assertRefused(
          result,
          new RegExp(`spec\\.securityContext\\.runAsUser: uid ${uid} is the host's user ${name}`),
        );
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    }
  },
});

Deno.test({
  name: "ids inside the allowlist that the host does not name still run",
  ignore: !isRoot,
  fn: async () => {
    const free = (ids: Map<string, number>, from: number) => {
      const used = new Set(ids.values());
      let id = from;
      while (used.has(id)) id++;
      return id;
    };
    const uid = free(hostIds("passwd"), 2000);
    const [gid, extra, fs] = [2000, 3000, 4000].map((n) => free(hostIds("group"), n));
    const result = await attempt('echo "$(id -u) $(id -g) $(id -G)"', {
      runAsUser: uid,
      runAsGroup: gid,
      supplementalGroups: [extra],
      fsGroup: fs,
    });
    assert.equal(result.status?.[0]?.state?.waiting, undefined);
    assert.equal(result.log, `${uid} ${gid} ${gid} ${extra} ${fs}\ndone\n`);
  },
});
