/**
 * `kubectl attach` through the real apiserver to a pod of the process provider: stdin reaches
 * the container and its answer comes back; a second session finds the container still reading.
 */
import assert from "node:assert/strict";
import { useCluster } from "../../../tools/cluster/harness.ts";
import { type RunningVkubelet, startVkubelet } from "../../../tools/cluster/vkubelet.ts";

const NODE = `vk-process-attach-${crypto.randomUUID().slice(0, 6)}`;

/** Runs `kubectl attach -i`, sends `line`, and returns stdout once it shows `expect`. */
async function attachAndSay(
  cluster: Awaited<ReturnType<typeof useCluster>>,
  args: string[],
  line: string,
  expect: string,
): Promise<string> {
  const child = new Deno.Command(cluster.binary, {
    args: ["kubectl", `--kubeconfig=${cluster.kubeconfigPath}`, ...args],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stdin = child.stdin.getWriter();
  const errors = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  const deadline = setTimeout(() => child.kill("SIGKILL"), 30_000);
  try {
    // Keep stdin open: its end would end a session of a container without stdinOnce.
    await stdin.write(new TextEncoder().encode(`${line}\n`));
    while (!out.includes(expect)) {
      const { value, done } = await reader.read();
      if (done) break;
      out += value;
    }
  } finally {
    clearTimeout(deadline);
    try {
      child.kill("SIGTERM");
    } catch {
      // ended
    }
    await reader.cancel().catch(() => {});
    stdin.releaseLock();
    await child.stdin.close().catch(() => {});
  }
  const status = await child.status;
  const stderr = await errors;
  assert.ok(
    out.includes(expect),
    `kubectl attach (exit ${status.code}) printed ${JSON.stringify(out)}; stderr: ${stderr}`,
  );
  return out;
}

Deno.test("process provider: kubectl attach -i sends stdin to the container and shows its answer", async () => {
  const cluster = await useCluster();
  const ns = await cluster.newNamespace("attach");
  const stateDir = await Deno.makeTempDir({ prefix: "vk-process-attach-" });
  const kubectl = cluster.kubectlIn(ns);
  let vk: RunningVkubelet | undefined;
  try {
    vk = await startVkubelet(cluster, {
      nodeName: NODE,
      provider: "process",
      providerConfig: JSON.stringify({ stateDir, cgroups: "off" }),
    });
    await kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "reader" },
        spec: {
          nodeSelector: { "kubernetes.io/hostname": NODE },
          tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
          automountServiceAccountToken: false,
          containers: [{
            name: "main",
            image: "busybox",
            stdin: true,
            command: ["sh", "-c", "while read l; do echo got:$l; done"],
          }],
        },
      }),
    );
    await kubectl(["wait", "--for=condition=Ready", "pod/reader", "--timeout=60s"]);
    const attach = ["-n", ns, "attach", "-i", "pod/reader", "-c", "main"];
    assert.match(await attachAndSay(cluster, attach, "hello", "got:hello"), /^got:hello$/m);
    // The first session has gone; the container still reads its stdin.
    assert.match(await attachAndSay(cluster, attach, "again", "got:again"), /^got:again$/m);
    const restarts = await kubectl([
      "get",
      "pod",
      "reader",
      "-o",
      "jsonpath={.status.containerStatuses[0].restartCount}",
    ]);
    assert.equal(restarts, "0");
  } finally {
    await cluster.kubectl(["delete", "namespace", ns, "--wait=true", "--timeout=60s"]);
    await vk?.stop("SIGTERM");
    await cluster.kubectl(["delete", "node", NODE]);
    await Deno.remove(stateDir, { recursive: true }).catch(() => {});
  }
});
