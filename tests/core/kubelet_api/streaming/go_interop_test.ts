/**
 * Interop with the REAL Go peer: client-go's SPDY remotecommand executor and port-forwarder
 * (moby/spdystream underneath, as in kubectl and the apiserver) against our session, remote
 * command and port-forward layers over plain TCP on 127.0.0.1.
 */
import assert from "node:assert/strict";
import { acceptRemoteCommand } from "../../../../core/kubelet_api/streaming/remote_command.ts";
import {
  KUBELET_REMOTE_COMMAND_PROTOCOLS,
  remoteCommandVersion,
} from "../../../../core/kubelet_api/streaming/negotiation.ts";
import { servePortForward } from "../../../../core/kubelet_api/streaming/port_forward.ts";
import type { TerminalSize } from "../../../../core/kubelet_api/streaming/resize.ts";
import { startUpgradeServer, type UpgradedRequest } from "./_upgrade_server.ts";
import { buildGoPeer, goAvailable, goPattern, runGoPeer } from "./_go_peer.ts";
import { sha256 } from "./_memory_duplex.ts";
import { StreamProtocol } from "../../../../spdy/protocols.ts";

const haveGo = await goAvailable();
if (!haveGo) console.warn("SKIPPING the Go interop tests: no `go` toolchain on PATH");

const encoder = new TextEncoder();

function upperCase(): TransformStream<Uint8Array, Uint8Array> {
  return new TransformStream({
    transform(chunk, controller) {
      controller.enqueue(chunk.map((b) => (b >= 0x61 && b <= 0x7a ? b - 32 : b)));
    },
  });
}

/** The fake container: stdout = upper-cased stdin, one stderr line, exit 3 (or resizes on TTY). */
async function execHandler({ url, protocol, session }: UpgradedRequest): Promise<void> {
  const tty = url.searchParams.get("tty") === "1";
  const command = await acceptRemoteCommand(session, {
    protocol,
    expectStdin: url.searchParams.get("input") === "1",
    expectStdout: url.searchParams.get("output") === "1",
    expectStderr: url.searchParams.get("error") === "1" && !tty,
    tty,
    timeoutMs: 10_000,
  });
  const sizes: TerminalSize[] = [];
  const gotTwoSizes = Promise.withResolvers<void>();
  const resizes = (async () => {
    for await (const size of command.resize ?? []) {
      sizes.push(size);
      if (sizes.length === 2) gotTwoSizes.resolve();
    }
  })();
  await command.stdin!.pipeThrough(upperCase()).pipeTo(command.stdout!, { preventClose: tty });
  if (tty) {
    await gotTwoSizes.promise;
    const writer = command.stdout!.getWriter();
    await writer.write(encoder.encode(sizes.map((s) => `${s.width}x${s.height}`).join(",")));
    await writer.close();
    await command.finish({ exitCode: 0 });
  } else {
    const writer = command.stderr!.getWriter();
    await writer.write(encoder.encode(`protocol ${protocol}: done\n`));
    writer.releaseLock();
    await command.finish({ exitCode: 3 });
  }
  await resizes;
}

async function withServer(
  handler: (request: UpgradedRequest) => Promise<void>,
  body: (port: number, binary: string) => Promise<void>,
) {
  const binary = await buildGoPeer();
  const server = await startUpgradeServer(
    (url) =>
      url.pathname.startsWith("/portForward")
        ? [StreamProtocol.portForward]
        : KUBELET_REMOTE_COMMAND_PROTOCOLS,
    handler,
  );
  try {
    await body(server.port, binary);
  } finally {
    await server.close();
  }
  return server.answers;
}

Deno.test({
  name: "client-go exec over SPDY: 300 KiB stdin echoed upper-case, a stderr line, exit code 3",
  ignore: !haveGo,
  async fn() {
    const stdin = goPattern(300 * 1024, 0);
    const expected = await sha256(stdin.map((b) => (b >= 0x61 && b <= 0x7a ? b - 32 : b)));
    const answers = await withServer(execHandler, async (port, binary) => {
      const { result, log } = await runGoPeer(binary, [
        "-mode",
        "exec",
        "-addr",
        `127.0.0.1:${port}`,
      ]);
      assert.equal(result.error, undefined, log);
      assert.equal(result.ok, true);
      assert.equal(result.exitCode, 3);
      assert.equal(result.stdoutLen, stdin.length);
      assert.equal(result.stdoutSha256, expected);
      assert.equal(result.stderr, "protocol v4.channel.k8s.io: done\n");
    });
    assert.equal(answers[0].ok && answers[0].protocol, "v4.channel.k8s.io");
    assert.equal(remoteCommandVersion("v4.channel.k8s.io"), 4);
  },
});

Deno.test({
  name: "client-go exec with a TTY delivers terminal resizes and exits 0",
  ignore: !haveGo,
  async fn() {
    await withServer(execHandler, async (port, binary) => {
      const { result, log } = await runGoPeer(binary, [
        "-mode",
        "exec-tty",
        "-stdin",
        "100",
        "-addr",
        `127.0.0.1:${port}`,
      ]);
      assert.equal(result.error, undefined, log);
      assert.equal(result.exitCode, 0);
      assert.equal(result.stdoutLen, 100 + "80x24,120x40".length);
      const upper = new TextDecoder().decode(goPattern(100, 0)).toUpperCase();
      // A TTY merges stderr into stdout and sends no stderr stream.
      assert.equal(result.stdout, upper + "80x24,120x40");
    });
  },
});

Deno.test({
  name: "client-go port-forward pairs streams by requestid and echoes parallel connections",
  ignore: !haveGo,
  async fn() {
    const conns = 6, size = 200 * 1024;
    const handler = async ({ session }: UpgradedRequest) => {
      await servePortForward(session, async ({ data }) => {
        await data.readable.pipeTo(data.writable);
      }, { timeoutMs: 10_000 });
    };
    await withServer(handler, async (port, binary) => {
      const { result, log } = await runGoPeer(binary, [
        "-mode",
        "portforward",
        "-conns",
        String(conns),
        "-size",
        String(size),
        "-addr",
        `127.0.0.1:${port}`,
      ]);
      assert.equal(result.error, undefined, log);
      const expected = await Promise.all(
        Array.from(
          { length: conns },
          async (_, i) => `${size}:${await sha256(goPattern(size, i))}`,
        ),
      );
      assert.deepEqual(result.echoes, expected);
    });
  },
});
