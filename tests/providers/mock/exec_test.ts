import assert from "node:assert/strict";
import type { AttachIO } from "../../../provider/mod.ts";
import { mockProvider, samplePod, text } from "./_setup.ts";

const ref = { namespace: "default", pod: "web", container: "app" };

/** Streams for one session: stdin from `input`, stdout/stderr collected. */
function session(input?: string, tty = false) {
  const out = new TransformStream<Uint8Array, Uint8Array>();
  const err = new TransformStream<Uint8Array, Uint8Array>();
  const io: AttachIO = {
    stdin: input === undefined ? undefined : ReadableStream.from([new TextEncoder().encode(input)]),
    stdout: out.writable,
    stderr: tty ? undefined : err.writable,
    tty,
  };
  const stdout = text(out.readable);
  const stderr = text(err.readable);
  const close = async () => {
    await out.writable.close();
    await err.writable.close();
    return { stdout: await stdout, stderr: await stderr };
  };
  return { io, close };
}

async function run(command: string[], input?: string) {
  const { provider, options } = mockProvider();
  await provider.createPod(samplePod(), options);
  const { io, close } = session(input);
  const code = await provider.runInContainer(ref, { ...options, command, io });
  return { code, ...await close() };
}

Deno.test("echo, exit and unknown commands behave like a shell", async () => {
  assert.deepEqual(await run(["echo", "hello", "world"]), {
    code: 0,
    stdout: "hello world\n",
    stderr: "",
  });
  assert.equal((await run(["exit", "3"])).code, 3);
  assert.equal((await run(["sh", "-c", "exit 42"])).code, 42);
  assert.deepEqual(await run(["sh", "-c", "echo 'a b'"]), { code: 0, stdout: "a b\n", stderr: "" });
  assert.deepEqual(await run(["ls"]), {
    code: 127,
    stdout: "",
    stderr: "mock: ls: command not found\n",
  });
});

Deno.test("cat copies stdin to stdout", async () => {
  assert.deepEqual(await run(["cat"], "line 1\nline 2\n"), {
    code: 0,
    stdout: "line 1\nline 2\n",
    stderr: "",
  });
});

Deno.test("env shows the container's environment", async () => {
  const { stdout } = await run(["env"]);
  assert.ok(stdout.includes("HOSTNAME=web\n"));
  assert.ok(stdout.endsWith("A=1\n"));
  assert.equal((await run(["printenv", "A"])).stdout, "1\n");
});

Deno.test("attach greets and echoes stdin", async () => {
  const { provider, options } = mockProvider();
  await provider.createPod(samplePod(), options);
  const { io, close } = session("hi\n");
  await provider.attachToContainer(ref, { ...options, io });
  assert.equal((await close()).stdout, "mock: attached to container app\nhi\n");
});

Deno.test("every port of a mock pod echoes what it receives", async () => {
  const { provider, options } = mockProvider();
  await provider.createPod(samplePod(), options);
  const back = new TransformStream<Uint8Array, Uint8Array>();
  const readable = ReadableStream.from([new TextEncoder().encode("ping")]);
  const received = text(back.readable);
  await provider.portForward({ namespace: "default", name: "web" }, {
    ...options,
    port: 8080,
    stream: { readable, writable: back.writable },
  });
  assert.equal(await received, "ping");
});
