/**
 * Each container has its own PID namespace and sees only its own processes in /proc, so a pod
 * cannot read another pod's environment (`/proc/<pid>/environ`), files (`/proc/<pid>/root`) or
 * command lines, even with the same uid; `kubectl exec` joins the container's namespace.
 * @module
 */
import assert from "node:assert/strict";
import { cleanup, collector, makePod, readAll, startProvider, waitFor } from "./_helpers.ts";

const isRoot = Deno.uid() === 0;

/** Looks at every process in /proc for the victim's environment, files and name. */
function pryScript(secret: string, victimName: string): string {
  // Both are built from halves, so that the scan does not find itself.
  const half = (text: string) => [text.slice(0, 4), text.slice(4)];
  const [s1, s2] = half(secret);
  const [n1, n2] = half(victimName);
  return [
    `secret='${s1}'; secret="\${secret}${s2}"; name='${n1}'; name="\${name}${n2}"`,
    `for p in /proc/[0-9]*; do`,
    `  if tr '\\0' '\\n' < "$p/environ" 2>/dev/null | grep -q "$secret"; then echo "environ of $p"; fi`,
    `  if [ -e "$p/root/victim-only/marker" ]; then echo "root of $p"; fi`,
    `  if tr '\\0' ' ' < "$p/cmdline" 2>/dev/null | grep -q "$name"; then echo "cmdline of $p"; fi`,
    `done`,
    `echo "scanned $(ls -d /proc/[0-9]* | wc -l) processes"`,
    `sleep 60`,
  ].join("\n");
}

Deno.test({
  name: "a pod cannot see another pod's processes, environment or files through /proc",
  ignore: !isRoot,
  fn: async () => {
    const t = await startProvider();
    const secret = `secret-${crypto.randomUUID()}`;
    const sameUser = { runAsUser: 1000 };
    const victim = makePod([{
      name: "v",
      image: "x",
      command: ["sh", "-c", "echo marker > /victim-only/marker; echo ready; sleep 60"],
      env: [{ name: "SECRET", value: secret }],
      volumeMounts: [{ name: "own", mountPath: "/victim-only" }],
    }], { securityContext: sameUser, volumes: [{ name: "own", emptyDir: {} }] });
    const victimName = victim.metadata!.name!;
    const prying = makePod([{
      name: "p",
      image: "x",
      command: ["sh", "-c", pryScript(secret, victimName)],
    }], { securityContext: sameUser });
    const ref = (pod: typeof victim, container: string) => ({
      namespace: "default",
      pod: pod.metadata!.name!,
      container,
    });
    try {
      await t.provider.createPod(victim, {});
      await waitFor("the victim running", async () => {
        const text = await readAll(await t.provider.getContainerLogs(ref(victim, "v"), {}));
        return text.includes("ready");
      });
      await t.provider.createPod(prying, {});
      const log = await waitFor("the scan", async () => {
        const text = await readAll(await t.provider.getContainerLogs(ref(prying, "p"), {}));
        return text.includes("scanned") && text;
      });
      assert.doesNotMatch(log, /environ of|root of|cmdline of/, log);
      // Its own runner (PID 1), shell and scan: a handful, not the host's hundreds.
      const count = Number(/scanned (\d+) processes/.exec(log)![1]);
      assert.ok(count > 0 && count < 10, log);
      // kubectl exec joins the container's namespace: PID 1 is the container's runner.
      const out = collector();
      const code = await t.provider.runInContainer(ref(prying, "p"), {
        command: ["sh", "-c", "tr '\\0' ' ' < /proc/1/cmdline; echo; ls -d /proc/[0-9]* | wc -l"],
        io: { tty: false, stdout: out.writable, stderr: collector().writable },
      });
      assert.equal(code, 0);
      assert.match(out.text(), /vkubelet-runner/);
      assert.ok(Number(out.text().trim().split("\n").pop()) < 10, out.text());
    } finally {
      await cleanup(t.provider, prying);
      await cleanup(t.provider, victim);
      await t.close();
    }
  },
});
