/**
 * Attack through vkubelet's inherited descriptors (issue 61, item 5e): vkubelet started with a
 * root-only file open on fd 5 and fd 12 (as `exec 5<file` in a service script would leave it)
 * ran containers that had it too, and a non-root pod read the file with `cat <&5`. The provider
 * runs in a child process that inherits those fds; its pod lists its own fds and reads fd 5.
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";

const isRoot = Deno.uid() === 0;
const hasBash = (() => {
  try {
    return Deno.statSync("/bin/bash").isFile;
  } catch {
    return false;
  }
})();
const repo = new URL("../../../", import.meta.url).pathname;

/** What the child runs: a provider (the tests' helper) and one non-root pod; prints its log. */
const CHILD = `
import { cleanup, makePod, readAll, startProvider, waitFor } from "${
  new URL("./_helpers.ts", import.meta.url).href
}";
const t = await startProvider();
const pod = makePod([{
  name: "c",
  image: "x",
  command: ["sh", "-c", 'sleep 5 & echo "fds: $(ls /proc/$!/fd | sort -n | tr "\\\\n" " ")"; (cat <&5) 2>/dev/null || echo "no fd 5"; echo done; sleep 30'],
}], { securityContext: { runAsUser: 2000, runAsGroup: 2000, allowPrivilegeEscalation: false } });
const ref = { namespace: "default", pod: pod.metadata.name, container: "c" };
try {
  await t.provider.createPod(pod, {});
  const log = await waitFor("the pod's report", async () => {
    const text = await readAll(await t.provider.getContainerLogs(ref, {}));
    return text.includes("done") && text;
  });
  console.log(JSON.stringify(log));
} finally {
  await cleanup(t.provider, pod);
  await t.close();
}
`;

Deno.test({
  name: "a pod does not get the descriptors vkubelet inherited, and cannot read their files",
  ignore: !isRoot || !hasBash,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "vk-fds-" });
    const secret = join(dir, "root-only");
    await Deno.writeTextFile(secret, "root-secret\n", { mode: 0o600 });
    try {
      // bash: dash cannot open fd 12.
      const out = await new Deno.Command("/bin/bash", {
        args: [
          "-c",
          'exec 5<"$1" 12<"$1"; shift; exec "$@"',
          "vk-parent",
          secret,
          Deno.execPath(),
          "eval",
          "--ext=ts",
          CHILD,
        ],
        cwd: repo,
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stderr = new TextDecoder().decode(out.stderr);
      assert.ok(out.success, stderr);
      const log = JSON.parse(new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!);
      assert.ok(!log.includes("root-secret"), `the pod read the root-only file: ${log}`);
      assert.equal(log, "fds: 0 1 2 \nno fd 5\ndone\n");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
