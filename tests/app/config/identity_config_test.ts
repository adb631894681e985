import assert from "node:assert/strict";
import { loadConfig } from "../../../app/config/config.ts";

async function load(args: string[], env: Record<string, string> = {}, file?: string) {
  return await loadConfig({
    args: file ? [...args, "--config=/c.yaml"] : args,
    env,
    readFile: (path) =>
      path === "/c.yaml" && file
        ? Promise.resolve(file)
        : Promise.reject(new Deno.errors.NotFound(path)),
  });
}

async function valid(args: string[], env: Record<string, string> = {}, file?: string) {
  const result = await load(args, env, file);
  assert.ok(result.ok, `expected a valid config, got ${JSON.stringify(result)}`);
  return result.config;
}

Deno.test("kubelet flag names work: --hostname-override names the node, taints in the kubelet's format", async () => {
  const config = await valid([
    "--provider=mock",
    "--hostname-override=edge-1",
    "--register-with-taints=example.com/dedicated=gpu:NoSchedule,example.com/spot:PreferNoSchedule",
    "--node-labels=tier=edge",
  ]);
  assert.equal(config.nodeName, "edge-1");
  assert.deepEqual(config.registerWithTaints, [
    { key: "example.com/dedicated", value: "gpu", effect: "NoSchedule" },
    { key: "example.com/spot", effect: "PreferNoSchedule" },
  ]);
  assert.deepEqual(config.nodeLabels, { tier: "edge" });
  const fromEnv = await valid(["--provider=mock"], {
    VKUBELET_HOSTNAME_OVERRIDE: "edge-2",
    VKUBELET_BOOTSTRAP_KUBECONFIG: "/b.kubeconfig",
    VKUBELET_CERT_DIR: "/pki",
  });
  assert.equal(fromEnv.nodeName, "edge-2");
  assert.equal(fromEnv.bootstrapKubeconfig, "/b.kubeconfig");
  const fromFile = await valid(
    ["--provider=mock"],
    {},
    "bootstrapKubeconfig: /b.kubeconfig\nrotateCertificates: false\nregisterWithTaints: [a=b:NoExecute]\n",
  );
  assert.equal(fromFile.rotateCertificates, false);
  assert.deepEqual(fromFile.registerWithTaints, [{ key: "a", value: "b", effect: "NoExecute" }]);
});

Deno.test("rotation is on by default with bootstrap, and a CSR serving certificate unless files are given", async () => {
  const plain = await valid(["--provider=mock"]);
  assert.equal(plain.rotateCertificates, false);
  assert.equal(plain.rotateServerCertificates, true);
  const bootstrapped = await valid(["--provider=mock", "--bootstrap-kubeconfig=/b"]);
  assert.equal(bootstrapped.rotateCertificates, true);
  const files = await valid(["--provider=mock", "--tls-self-signed"]);
  assert.equal(files.rotateServerCertificates, false);
});

Deno.test("identity options that cannot work together are refused, naming the fix", async () => {
  const result = await load([
    "--provider=mock",
    "--rotate-certificates",
    "--rotate-server-certificates",
    "--tls-self-signed",
    "--register-with-taints=nokey",
  ]);
  assert.ok(!result.ok);
  const text = result.errors.join("\n");
  assert.match(text, /--rotate-certificates.*set --bootstrap-kubeconfig too/);
  assert.match(text, /--rotate-server-certificates.*conflicts with --tls-cert-file/);
  assert.match(text, /taint "nokey" needs an effect NoSchedule, PreferNoSchedule, NoExecute/);
  const off = await load(["--provider=mock", "--rotate-server-certificates=false"]);
  assert.ok(!off.ok);
  assert.match(off.errors.join("\n"), /set --tls-cert-file .* or --tls-self-signed/);
});

Deno.test("with --bootstrap-kubeconfig, --kubeconfig may name a file that does not exist yet, and $KUBECONFIG is not taken for it", async () => {
  const kubeadm = await valid([
    "--provider=mock",
    "--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
    "--kubeconfig=/etc/kubernetes/kubelet.conf",
  ]);
  assert.equal(kubeadm.kubeconfig, "/etc/kubernetes/kubelet.conf");
  const plain = await load(["--provider=mock", "--kubeconfig=/etc/kubernetes/kubelet.conf"]);
  assert.ok(!plain.ok);
  assert.match(plain.errors.join("\n"), /--kubeconfig: cannot read/);
  const fromEnv = await load(["--provider=mock", "--bootstrap-kubeconfig=/b"], {
    KUBECONFIG: "/home/me/.kube/config",
  });
  assert.ok(fromEnv.ok, JSON.stringify(fromEnv));
  assert.equal(fromEnv.config.kubeconfig, undefined);
  assert.match(
    fromEnv.warnings.join("\n"),
    /KUBECONFIG \(environment\) is ignored with --bootstrap-kubeconfig/,
  );
  // The same file as both (scripts/try_on_cluster.sh): nothing to warn about.
  const same = await load(["--provider=mock", "--bootstrap-kubeconfig=/b"], { KUBECONFIG: "/b" });
  assert.ok(same.ok);
  assert.equal(same.config.kubeconfig, undefined);
  assert.deepEqual(same.warnings, []);
});
