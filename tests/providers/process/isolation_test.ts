/**
 * A pod cannot read what belongs to vkubelet or to other pods: other pods' directories under
 * the state directory (their Secrets, tokens, logs), vkubelet's config and keys, vkubelet's
 * environment. Inside the mount namespace they are hidden, even from a root container; without
 * it, file modes and a non-root runAsUser keep them out.
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { probeMountNamespace } from "../../../providers/process/launch/mount_ns.ts";
import { cleanup, makePod, readAll, startProvider, waitFor } from "./_helpers.ts";

const isRoot = Deno.uid() === 0;
const namespaceSupport = isRoot ? await probeMountNamespace() : { ok: false };

/** A directory standing for vkubelet's config dir: a kubeconfig only its owner may read. */
async function configDir(): Promise<{ dir: string; kubeconfig: string }> {
  const dir = await Deno.makeTempDir({ prefix: "vk-config-" });
  const kubeconfig = join(dir, "kubeconfig");
  await Deno.writeTextFile(kubeconfig, "client-key-data: secret\n", { mode: 0o600 });
  return { dir, kubeconfig };
}

/** A script that says, for each path, whether it could be read, then lists `dir`. */
function probeScript(paths: string[], dir: string): string {
  const checks = paths.map((p) =>
    `if cat '${p}' >/dev/null 2>&1; then echo "read ${p}"; else echo "denied ${p}"; fi`
  );
  return [...checks, `echo "pods: $(ls '${dir}' 2>/dev/null | wc -l)"`, "sleep 30"].join("\n");
}

/** Runs a pod whose log holds "secret-a", then a prying pod; returns the prying pod's log. */
async function pry(
  config: Record<string, unknown>,
  securityContext: Record<string, unknown>,
): Promise<{ log: string; victimLog: string; kubeconfig: string }> {
  const { dir, kubeconfig } = await configDir();
  const t = await startProvider({ config: { hiddenPaths: [dir], ...config } });
  const victim = makePod([{
    name: "v",
    image: "x",
    command: ["sh", "-c", "echo secret-a; sleep 30"],
  }]);
  const victimDir = join(
    t.stateDir,
    "pods",
    `default_${victim.metadata!.name}_${victim.metadata!.uid}`,
  );
  const victimLog = join(victimDir, "containers", "v", "logs", "0.log");
  const environ = `/proc/${Deno.pid}/environ`;
  const prying = makePod([{
    name: "p",
    image: "x",
    command: ["sh", "-c", probeScript([victimLog, kubeconfig, environ], join(t.stateDir, "pods"))],
  }], { securityContext });
  try {
    await t.provider.createPod(victim, {});
    await waitFor("the victim's log", () => {
      try {
        return Deno.readTextFileSync(victimLog).includes("secret-a");
      } catch {
        return false;
      }
    });
    await t.provider.createPod(prying, {});
    const ref = { namespace: "default", pod: prying.metadata!.name!, container: "p" };
    const log = await waitFor("the prying pod's report", async () => {
      const text = await readAll(await t.provider.getContainerLogs(ref, {}));
      return text.includes("pods:") && text;
    });
    return { log, victimLog, kubeconfig };
  } finally {
    await cleanup(t.provider, prying);
    await cleanup(t.provider, victim);
    await t.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test({
  name: "in the mount namespace a root pod sees neither other pods' files nor vkubelet's",
  ignore: !namespaceSupport.ok,
  fn: async () => {
    const { log, victimLog, kubeconfig } = await pry({ mountNamespace: "required" }, {});
    assert.equal(
      log,
      `denied ${victimLog}\ndenied ${kubeconfig}\ndenied /proc/${Deno.pid}/environ\n` +
        // Its own directory is the one left in the state directory.
        "pods: 1\n",
    );
  },
});

Deno.test({
  name: "without the mount namespace a non-root pod is kept out by file modes",
  ignore: !isRoot,
  fn: async () => {
    const { log, victimLog, kubeconfig } = await pry({ mountNamespace: "off" }, {
      runAsUser: 1000,
      runAsGroup: 1000,
    });
    assert.equal(
      log,
      `denied ${victimLog}\ndenied ${kubeconfig}\ndenied /proc/${Deno.pid}/environ\npods: 0\n`,
    );
  },
});
