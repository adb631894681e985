/**
 * docs/writing-a-provider.md: the example provider under examples/ is loaded by path
 * (`--provider=<file>`, its config from `--provider-config`) by the real vkubelet process and
 * runs a pod on the real control plane, with its logs through `kubectl logs`.
 */
import assert from "node:assert/strict";
import { useCluster } from "../../tools/cluster/harness.ts";
import { startVkubelet } from "../../tools/cluster/vkubelet.ts";
import { greeterPod, podLogs, podPhase } from "./_helpers.ts";

const example = new URL("../../examples/hello_provider.ts", import.meta.url).pathname;

Deno.test("the example provider, loaded by path, runs a pod and serves its logs", async () => {
  const cluster = await useCluster();
  const nodeName = `vk-example-${crypto.randomUUID().slice(0, 6)}`;
  const ns = await cluster.newNamespace("example");
  const vk = await startVkubelet(cluster, {
    nodeName,
    provider: example,
    providerConfig: "greeting: hi from the example provider\n",
  });
  try {
    const applied = await cluster.kubectl(["apply", "-f", "-"], {
      stdin: JSON.stringify(greeterPod(ns, nodeName, "unused")),
    });
    assert.equal(applied.code, 0, applied.stderr);
    await podPhase(cluster, ns, "greeter", "Running");
    const logs = await podLogs(cluster, ns, "greeter", "hi from the example provider");
    assert.equal(logs, `hi from the example provider from ${ns}/greeter/main\n`);
    const deleted = await cluster.kubectl(["-n", ns, "delete", "pod", "greeter", "--timeout=30s"]);
    assert.equal(deleted.code, 0, deleted.stderr);
  } finally {
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    assert.equal((await vk.stop()).code, 0, vk.output());
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
  }
});
