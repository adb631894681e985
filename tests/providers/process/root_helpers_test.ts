/**
 * A restricted pod (runAsUser 1000, drop ALL, no privilege escalation) must not run code as
 * root through the environment vkubelet's root helpers (unshare, sh, chroot, setpriv, nsenter,
 * script) used to inherit: a PATH whose first directory holds the pod's own `setpriv` and
 * friends, LD_PRELOAD of the pod's library, LD_LIBRARY_PATH to a directory holding a library
 * the helpers load. Every planted program and library records the uid it ran as; none may be 0.
 */
import assert from "node:assert/strict";
import type { EnvVar, Pod, SecurityContext } from "kubernetes-types/core/v1.d.ts";
import { cleanup, collector, makePod, readAll, startProvider, waitFor } from "./_helpers.ts";

const isRoot = Deno.uid() === 0;
const hasGcc = (() => {
  try {
    return new Deno.Command("gcc", { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
})();

const restricted: SecurityContext = {
  runAsUser: 1000,
  allowPrivilegeEscalation: false,
  capabilities: { drop: ["ALL"] },
};

/** Programs a pod plants first on its PATH; each records its uid, then runs the real one. */
const PLANTED = [
  "setpriv",
  "nsenter",
  "unshare",
  "sh",
  "chroot",
  "script",
  "mount",
  "sleep",
  "true",
];

/**
 * A shared library that records who loaded it in `log` (built with gcc); with `filtee`, a
 * filter whose symbols are the real library's (ld --filter), so the program still works.
 */
async function buildRecorder(
  path: string,
  tag: string,
  log: string,
  filtee?: string,
): Promise<void> {
  const source = `#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void record(void) {
  char exe[256] = {0};
  readlink("/proc/self/exe", exe, sizeof exe - 1);
  char line[512];
  int n = snprintf(line, sizeof line, "${tag} uid=%d %s\\n", (int)geteuid(), exe);
  int fd = open("${log}", O_WRONLY | O_APPEND | O_CREAT, 0666);
  if (fd >= 0) { write(fd, line, n); close(fd); }
}
`;
  const c = `${path}.c`;
  await Deno.writeTextFile(c, source);
  const out = await new Deno.Command("gcc", {
    args: [
      ...["-shared", "-fPIC", "-o", path, c, `-Wl,-soname,${path.split("/").pop()}`],
      ...(filtee ? [`-Wl,--filter=${filtee}`] : []),
    ],
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
}

/** Where the real libcap-ng is (from `ldd` of setpriv). */
function libcapNg(): string {
  const out = new Deno.Command("ldd", { args: ["/usr/bin/setpriv"], stdout: "piped" }).outputSync();
  const path = /libcap-ng\.so\.0 => (\S+)/.exec(new TextDecoder().decode(out.stdout))?.[1];
  assert.ok(path, "setpriv does not load libcap-ng here");
  return path;
}

/** The init container's script: plants the programs in `dir` (which the pod owns). */
function plantScript(dir: string): string {
  const lines = [`mkdir -p ${dir}/bin`];
  for (const name of PLANTED) {
    const real = ["chroot"].includes(name) ? `/usr/sbin/${name}` : `/usr/bin/${name}`;
    lines.push(
      `printf '#!/bin/sh\\necho "${name} uid=$(/usr/bin/id -u)" >> ${dir}/ran\\nexec ${real} "$@"\\n' > ${dir}/bin/${name}`,
      `chmod 755 ${dir}/bin/${name}`,
    );
  }
  return lines.join("\n");
}

/** A restricted pod whose main container gets `env`, with an exec probe and a postStart hook. */
function attackPod(dir: string, env: EnvVar[]): Pod {
  return makePod([{
    name: "c",
    image: "x",
    command: [
      "sh",
      "-c",
      'echo "LD_PRELOAD=$LD_PRELOAD LD_LIBRARY_PATH=$LD_LIBRARY_PATH"; sleep 60',
    ],
    env,
    securityContext: restricted,
    readinessProbe: { exec: { command: ["true"] }, periodSeconds: 1 },
    lifecycle: { postStart: { exec: { command: ["true"] } } },
  }], {
    securityContext: { runAsUser: 1000 },
    initContainers: [{
      name: "plant",
      image: "x",
      command: ["/bin/sh", "-c", plantScript(dir)],
      securityContext: restricted,
    }],
  });
}

/**
 * Runs the pod through container start, probe, hook and exec (with and without a TTY); what
 * fails is returned, not thrown, so that the caller first checks who ran what.
 */
async function exercise(pod: Pod): Promise<{ logs: string; problems: string[] }> {
  const t = await startProvider();
  const ref = { namespace: "default", pod: pod.metadata!.name!, container: "c" };
  const problems: string[] = [];
  try {
    await t.provider.createPod(pod, {});
    await waitFor("the container ready (its exec probe ran)", async () => {
      const p = await t.provider.getPod("default", ref.pod, {});
      return p?.status?.containerStatuses?.[0]?.ready === true;
    }, 20_000).catch((err) => problems.push(String(err)));
    for (const tty of [false, true]) {
      const code = await t.provider.runInContainer(ref, {
        command: ["true"],
        io: { tty, stdout: collector().writable, stderr: tty ? undefined : collector().writable },
      }).catch((err) => String(err));
      if (code !== 0) problems.push(`exec (tty: ${tty}) gave ${code}`);
    }
    const logs = await readAll(await t.provider.getContainerLogs(ref, {}));
    return { logs, problems };
  } finally {
    await cleanup(t.provider, pod);
    await t.close();
  }
}

/**
 * The directory the pod plants into and the test reads: not under /tmp, which each container
 * now has of its own (launch/mount_ns.ts), so the repository's cache.
 */
async function attackDir(): Promise<string> {
  const cache = new URL("../../../.cache/", import.meta.url).pathname;
  await Deno.mkdir(cache, { recursive: true });
  const dir = await Deno.makeTempDir({ dir: cache, prefix: "vk-attack-" });
  await Deno.chmod(dir, 0o1777);
  return dir;
}

async function records(dir: string): Promise<string[]> {
  const text = await Deno.readTextFile(`${dir}/ran`).catch(() => "");
  return text.split("\n").filter(Boolean);
}

Deno.test({
  name: "a restricted pod's PATH never chooses the programs vkubelet runs as root",
  ignore: !isRoot,
  fn: async () => {
    const dir = await attackDir();
    try {
      const pod = attackPod(dir, [{
        name: "PATH",
        value: `${dir}/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin`,
      }]);
      const { problems } = await exercise(pod);
      const ran = await records(dir);
      assert.deepEqual(ran.filter((line) => line.endsWith(" uid=0")), [], ran.join("\n"));
      assert.deepEqual(problems, []);
      // The pod's own PATH still chooses its own commands, as the container user.
      assert.ok(ran.includes("sleep uid=1000"), ran.join("\n"));
      assert.ok(ran.includes("true uid=1000"), ran.join("\n"));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "a restricted pod's LD_PRELOAD and LD_LIBRARY_PATH reach only its own processes",
  ignore: !isRoot || !hasGcc,
  fn: async () => {
    const dir = await attackDir();
    try {
      await buildRecorder(`${dir}/preload.so`, "preload", `${dir}/ran`);
      // setpriv (util-linux) loads libcap-ng: a library of that name first on the path, which
      // passes every call on to the real one.
      await Deno.mkdir(`${dir}/lib`);
      await buildRecorder(`${dir}/lib/libcap-ng.so.0`, "libcap-ng", `${dir}/ran`, libcapNg());
      const pod = attackPod(dir, [
        { name: "LD_PRELOAD", value: `${dir}/preload.so` },
        { name: "LD_LIBRARY_PATH", value: `${dir}/lib` },
      ]);
      const { logs, problems } = await exercise(pod);
      const ran = await records(dir);
      assert.deepEqual(ran.filter((line) => / uid=0 /.test(line)), [], ran.join("\n"));
      assert.deepEqual(problems, []);
      // The container's own processes got both.
      assert.match(logs, new RegExp(`LD_PRELOAD=${dir}/preload.so LD_LIBRARY_PATH=${dir}/lib`));
      assert.ok(ran.some((line) => line.startsWith("preload uid=1000 ")), ran.join("\n"));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("env names the shell cannot export, and values with quotes and newlines, still arrive", async () => {
  const t = await startProvider();
  const value = `it's "quoted"\nand $(not expanded) \`either\``;
  const env: EnvVar[] = [
    { name: "my.var", value: "dotted" },
    { name: "-dash", value: "leading dash" },
    { name: "PLAIN", value },
  ];
  const show = ["/usr/bin/env"];
  const pod = makePod([{ name: "c", image: "x", command: ["sh", "-c", "env; sleep 30"], env }]);
  const ref = { namespace: "default", pod: pod.metadata!.name!, container: "c" };
  try {
    await t.provider.createPod(pod, {});
    const logs = await waitFor("the environment printed", async () => {
      const text = await readAll(await t.provider.getContainerLogs(ref, {}));
      return text.includes("PLAIN=") && text;
    });
    // dash passes on only names it can export; coreutils env (the container's command) shows all.
    assert.ok(logs.includes(`PLAIN=${value}\n`), logs);
    const out = collector();
    const code = await t.provider.runInContainer(ref, {
      command: show,
      io: { tty: false, stdout: out.writable, stderr: collector().writable },
    });
    assert.equal(code, 0);
    const lines = out.text();
    assert.ok(lines.includes("my.var=dotted\n"), lines);
    assert.ok(lines.includes("-dash=leading dash\n"), lines);
    assert.ok(lines.includes(`PLAIN=${value}\n`), lines);
  } finally {
    await cleanup(t.provider, pod);
    await t.close();
  }
});

Deno.test({
  name: "a restricted pod's volume at /usr/local/sbin never puts its programs in root's way",
  ignore: !isRoot,
  fn: async () => {
    const dir = await attackDir();
    try {
      // The init container fills an emptyDir (writable: mode 0777) with the programs; the
      // main container mounts it first on the default PATH, where the view's root would look.
      const plant = plantScript(dir).replaceAll(`${dir}/bin`, "/plant");
      const pod = attackPod(dir, []);
      pod.spec!.volumes = [{ name: "plant", emptyDir: {} }];
      pod.spec!.initContainers![0].command = ["/bin/sh", "-c", plant];
      pod.spec!.initContainers![0].volumeMounts = [{ name: "plant", mountPath: "/plant" }];
      pod.spec!.containers[0].volumeMounts = [{ name: "plant", mountPath: "/usr/local/sbin" }];
      const { problems } = await exercise(pod);
      const ran = await records(dir);
      assert.deepEqual(ran.filter((line) => line.endsWith(" uid=0")), [], ran.join("\n"));
      assert.deepEqual(problems, []);
      assert.ok(ran.includes("sleep uid=1000"), ran.join("\n"));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
