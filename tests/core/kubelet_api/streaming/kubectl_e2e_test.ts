/**
 * THE end-to-end check: REAL kubectl -> REAL kube-apiserver -> our kubelet API server ->
 * the streaming handler -> the mock provider, all on 127.0.0.0/8. Run with the control
 * plane's kubectl (WebSocket to the apiserver, translated to SPDY for us; port-forward
 * tunnelled) and with Debian's kubectl 1.20 (SPDY end to end); then with the node declaring
 * ExtendWebSocketsToKubelet so the apiserver passes WebSocket through to us untranslated.
 */
import assert from "node:assert/strict";
import { useCluster } from "../../../../tools/cluster/harness.ts";
import { EXTEND_WEBSOCKETS_TO_KUBELET } from "../../../../core/kubelet_api/streaming/declared_features.ts";
import {
  clusterKubectl,
  debianKubectl,
  type Kubectl,
  runKubectl,
  startVirtualNode,
  type VirtualNode,
} from "../../../../tools/harness/streaming_e2e.ts";
import { sha256 } from "./_memory_duplex.ts";

const sanitize = { sanitizeOps: true, sanitizeResources: true };
const MB = 1 << 20;
const decoder = new TextDecoder();

async function randomFile(bytes: number): Promise<{ path: string; sum: string }> {
  const data = new Uint8Array(bytes);
  for (let at = 0; at < bytes; at += 65536) {
    crypto.getRandomValues(data.subarray(at, Math.min(at + 65536, bytes)));
  }
  const path = await Deno.makeTempFile({ prefix: "vk-stream-", suffix: ".bin" });
  await Deno.writeFile(path, data);
  return { path, sum: await sha256(data) };
}

function podArgs(node: VirtualNode): string[] {
  return ["-n", node.namespace];
}

async function execChecks(t: Deno.TestContext, kubectl: Kubectl, node: VirtualNode, file: {
  path: string;
  sum: string;
}) {
  const pod = [...podArgs(node)];
  await t.step(`${kubectl.name}: exec -- echo hi`, async () => {
    const out = await runKubectl(kubectl, [
      ...pod,
      "exec",
      node.podName,
      "-c",
      "app",
      "--",
      "echo",
      "hi",
    ]);
    assert.equal(out.code, 0, out.stderr);
    assert.equal(decoder.decode(out.stdout), "hi\n");
  });
  await t.step(`${kubectl.name}: exec -i -- cat round-trips 10 MB byte-exact`, async () => {
    const out = await runKubectl(
      kubectl,
      [...pod, "exec", "-i", node.podName, "-c", "app", "--", "cat"],
      { stdinFile: file.path, signal: AbortSignal.timeout(120_000) },
    );
    assert.equal(out.code, 0, out.stderr);
    assert.equal(out.stdout.length, 10 * MB);
    assert.equal(await sha256(out.stdout), file.sum);
  });
  await t.step(`${kubectl.name}: exit 3 makes kubectl exit 3`, async () => {
    const out = await runKubectl(kubectl, [
      ...pod,
      "exec",
      node.podName,
      "-c",
      "app",
      "--",
      "sh",
      "-c",
      "exit 3",
    ]);
    assert.equal(out.code, 3, out.stderr);
  });
}

async function ttyCheck(t: Deno.TestContext, kubectl: Kubectl, node: VirtualNode) {
  await t.step(`${kubectl.name}: exec -it resizes reach the provider`, async () => {
    node.sizes.length = 0;
    const ttyFile = await Deno.makeTempFile({ prefix: "vk-tty-" });
    try {
      const argv = [
        ...kubectl.argv,
        ...podArgs(node),
        "exec",
        "-it",
        node.podName,
        "-c",
        "app",
        "--",
        "resize-probe",
        "120",
      ]
        .map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(" ");
      const script = new Deno.Command("script", {
        args: [
          "-q",
          "-e",
          "-c",
          `tty > ${ttyFile}; stty rows 40 cols 100; exec ${argv}`,
          "/dev/null",
        ],
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(60_000),
      }).spawn();
      for (let i = 0; i < 300 && !node.sizes.some((s) => s.width === 100); i++) {
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.deepEqual(node.sizes[0], { width: 100, height: 40 });
      const pty = (await Deno.readTextFile(ttyFile)).trim();
      const stty = await new Deno.Command("stty", {
        args: ["-F", pty, "rows", "50", "cols", "120"],
      })
        .output();
      assert.ok(stty.success, decoder.decode(stty.stderr));
      const out = await script.output();
      assert.equal(out.code, 0, decoder.decode(out.stdout) + decoder.decode(out.stderr));
      assert.deepEqual(node.sizes.at(-1), { width: 120, height: 50 });
      assert.match(decoder.decode(out.stdout), /100x40\r?\n[\s\S]*120x50/);
    } finally {
      await Deno.remove(ttyFile);
    }
  });
}

async function attachCheck(t: Deno.TestContext, kubectl: Kubectl, node: VirtualNode) {
  await t.step(`${kubectl.name}: attach -i echoes stdin after the greeting`, async () => {
    const input = await Deno.makeTempFile({ prefix: "vk-attach-" });
    try {
      await Deno.writeTextFile(input, "hello from attach\n");
      const out = await runKubectl(
        kubectl,
        [...podArgs(node), "attach", "-i", node.podName, "-c", "app"],
        { stdinFile: input, signal: AbortSignal.timeout(60_000) },
      );
      assert.equal(out.code, 0, out.stderr);
      assert.match(decoder.decode(out.stdout), /hello from attach\n/);
    } finally {
      await Deno.remove(input);
    }
  });
}

/** Forwards a local port with kubectl; `use(localPort)`; stops kubectl. */
async function withPortForward(
  kubectl: Kubectl,
  node: VirtualNode,
  use: (port: number) => Promise<void>,
) {
  const child = new Deno.Command(kubectl.argv[0], {
    args: [
      ...kubectl.argv.slice(1),
      ...podArgs(node),
      "port-forward",
      "--address=127.0.0.1",
      `pod/${node.podName}`,
      ":8080",
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderrText = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  try {
    let port = 0;
    while (!port) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`port-forward ended: ${seen}${await stderrText}`);
      seen += value;
      port = Number(/Forwarding from 127\.0\.0\.1:(\d+)/.exec(seen)?.[1] ?? 0);
    }
    await use(port).catch(async (err) => {
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      throw new Error(`${err.message}\nkubectl port-forward said: ${seen}${await stderrText}`);
    });
  } finally {
    try {
      child.kill("SIGTERM");
    } catch {
      // It already ended.
    }
    await child.status;
    await reader.cancel().catch(() => {});
    await stderrText;
  }
}

/** One connection: writes `data`, half-closes, reads the echo to EOF; returns its hash. */
async function echoThrough(port: number, data: Uint8Array): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const writing = (async () => {
    for (let at = 0; at < data.length; at += 256 * 1024) {
      const chunk = data.subarray(at, Math.min(at + 256 * 1024, data.length));
      for (let sent = 0; sent < chunk.length;) sent += await conn.write(chunk.subarray(sent));
    }
    await conn.closeWrite();
  })();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of conn.readable) {
    chunks.push(chunk);
    total += chunk.length;
  }
  await writing;
  const echo = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    echo.set(c, at);
    at += c.length;
  }
  return await sha256(echo);
}

async function portForwardCheck(t: Deno.TestContext, kubectl: Kubectl, node: VirtualNode) {
  await t.step(
    `${kubectl.name}: port-forward carries 10 parallel 10 MB connections byte-exact`,
    async () => {
      const payloads = Array.from(
        { length: 10 },
        (_, i) => Uint8Array.from({ length: 10 * MB }, (_, j) => (j * 13 + i * 7) & 0xff),
      );
      const sums = await Promise.all(payloads.map((p) => sha256(p)));
      await withPortForward(kubectl, node, async (port) => {
        const echoed = await Promise.all(payloads.map((p) => echoThrough(port, p)));
        assert.deepEqual(echoed, sums);
      });
    },
  );
}

Deno.test({
  name: "kubectl exec, attach and port-forward through the real apiserver reach the mock",
  ...sanitize,
  async fn(t) {
    const cluster = await useCluster();
    await using node = await startVirtualNode(cluster);
    const file = await randomFile(10 * MB);
    try {
      const kubectls = [clusterKubectl(cluster)];
      const old = await debianKubectl(cluster);
      if (old) kubectls.push(old);
      else {
        console.warn(
          "SKIPPING the kubectl 1.20 half: install Debian's kubernetes-client (kubectl 1.20) " +
            "or set VKUBELET_KUBECTL_1_20 to its binary",
        );
      }
      for (const kubectl of kubectls) {
        const before = node.handler.sessionCounts;
        await execChecks(t, kubectl, node, file);
        await ttyCheck(t, kubectl, node);
        await attachCheck(t, kubectl, node);
        await portForwardCheck(t, kubectl, node);
        const after = node.handler.sessionCounts;
        // Without the declared feature everything reaches us as SPDY (translated or not).
        assert.ok(
          (after["spdy v4.channel.k8s.io"] ?? 0) - (before["spdy v4.channel.k8s.io"] ?? 0) >= 5,
          JSON.stringify(after),
        );
        assert.ok(
          (after["spdy portforward.k8s.io"] ?? 0) > (before["spdy portforward.k8s.io"] ?? 0),
        );
      }

      const kept = await node.declareFeatures([EXTEND_WEBSOCKETS_TO_KUBELET]);
      if (!kept?.includes(EXTEND_WEBSOCKETS_TO_KUBELET)) {
        console.warn(
          "SKIPPING the WebSocket pass-through half: this apiserver drops declaredFeatures",
        );
        return;
      }
      const kubectl = { ...clusterKubectl(cluster), name: "kubectl (WebSocket to the kubelet)" };
      const before = node.handler.sessionCounts;
      await execChecks(t, kubectl, node, file);
      await ttyCheck(t, kubectl, node);
      await attachCheck(t, kubectl, node);
      await portForwardCheck(t, kubectl, node);
      const after = node.handler.sessionCounts;
      assert.ok(
        (after["websocket v5.channel.k8s.io"] ?? 0) -
            (before["websocket v5.channel.k8s.io"] ?? 0) >= 5,
        JSON.stringify(after),
      );
      assert.ok(
        (after["websocket SPDY/3.1+portforward.k8s.io"] ?? 0) >
          (before["websocket SPDY/3.1+portforward.k8s.io"] ?? 0),
        JSON.stringify(after),
      );
    } finally {
      await Deno.remove(file.path);
    }
  },
});
