/**
 * `deno compile` cannot fetch its base runtime here (DESIGN.md), so this test runs the same
 * module graph the compiled binary embeds — `main.ts` bundled with esbuild, as
 * `deno compile --bundle` does — from an empty folder, without deno.json, with exactly the
 * compiled binary's permissions, against the real control plane: the node gets Ready, a pod
 * runs as a local process (process provider: `--allow-run`, scoped `--allow-write`), and its
 * logs come back through `kubectl logs` (the kubelet API, TLS, SubjectAccessReview).
 */
import assert from "node:assert/strict";
import { get } from "node:https";
import { useCluster } from "../../tools/cluster/harness.ts";
import { VKUBELET_PERMISSIONS } from "../../scripts/permissions.ts";
import { bundleArgs } from "../../scripts/compile.ts";
import { greeterPod, podLogs, podPhase, spawnVkubelet } from "./_helpers.ts";
import { freePort } from "../../tools/cluster/ports.ts";
import { killMarkedProcesses } from "../../tools/harness/processes.ts";

const root = new URL("../../", import.meta.url).pathname;

/** GET /healthz without credentials, as a liveness probe from outside the container does. */
function healthzStatus(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    get({ host: "127.0.0.1", port, path: "/healthz", rejectUnauthorized: false }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    }).on("error", reject);
  });
}

Deno.test("the bundled graph runs with exactly the compiled permissions: Ready node, Running pod, logs", async () => {
  const cluster = await useCluster();
  const nodeName = `vk-bundle-${crypto.randomUUID().slice(0, 6)}`;
  // Nothing but the bundle in its folder; everything else elsewhere.
  const empty = await Deno.makeTempDir({ prefix: "vk-bundle-" });
  const files = await Deno.makeTempDir({ dir: "/tmp", prefix: "vk-bundle-files-" });
  const bundle = `${empty}/vkubelet.js`;
  const built = await new Deno.Command(Deno.execPath(), {
    args: bundleArgs(bundle),
    cwd: root,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(built.success, new TextDecoder().decode(built.stderr));
  assert.deepEqual([...Deno.readDirSync(empty)].map((e) => e.name), ["vkubelet.js"]);

  const providerConfig = `${files}/process.yaml`;
  await Deno.writeTextFile(providerConfig, `stateDir: ${files}/state\n`);
  const serving = await cluster.issueServingCert(nodeName, ["127.0.0.1", nodeName]);
  const ns = await cluster.newNamespace("bundle");
  const port = freePort();
  const vk = await spawnVkubelet(cluster, nodeName, Deno.execPath(), [
    "run",
    "--no-config",
    "--no-prompt",
    ...VKUBELET_PERMISSIONS,
    bundle,
    `--nodename=${nodeName}`,
    "--provider=process",
    `--provider-config=${providerConfig}`,
    `--kubeconfig=${await cluster.nodeKubeconfig(nodeName)}`,
    "--node-ip=127.0.0.1",
    "--listen-address=127.0.0.1",
    `--port=${port}`,
    `--tls-cert-file=${serving.certFile}`,
    `--tls-private-key-file=${serving.keyFile}`,
  ], { cwd: empty });
  try {
    const applied = await cluster.kubectl(["apply", "-f", "-"], {
      stdin: JSON.stringify(greeterPod(ns, nodeName, "hello-from-the-bundle")),
    });
    assert.equal(applied.code, 0, applied.stderr);
    await podPhase(cluster, ns, "greeter", "Running");
    const logs = await podLogs(cluster, ns, "greeter", "hello-from-the-bundle");
    assert.match(logs, /hello-from-the-bundle/);
    assert.doesNotMatch(vk.output(), /NotCapable|Requires \w+ access/);
    // The scoped FFI grant covers where glibc is on this machine (base/native_heap.ts).
    assert.match(vk.output(), /returning freed native memory to the system every 10 s/);
    // A liveness probe from outside (the image has no curl) relies on this answer without credentials.
    assert.equal(await healthzStatus(port), 401);
  } catch (err) {
    const pod = await cluster.kubectl(["-n", ns, "get", "pod", "greeter", "-o", "yaml"]);
    throw new Error(`${err}\npod:\n${pod.stdout}\nvkubelet's output:\n${vk.output()}`, {
      cause: err,
    });
  } finally {
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    const code = await vk.stop();
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
    await Deno.remove(empty, { recursive: true });
    // A stopped vkubelet leaves its pods running (as on a restart): end them with the test.
    await killMarkedProcesses({ cmdline: `${files}/state/` });
    await Deno.remove(files, { recursive: true }).catch(() => {});
    assert.equal(code, 0, vk.output());
  }
});
