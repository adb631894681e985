import assert from "node:assert/strict";
import { isNotSupported } from "../../../provider/mod.ts";
import { OutputFanout } from "../../../providers/process/streams/output_fanout.ts";
import { prefixAtEnd } from "../../../providers/process/streams/log_writer.ts";
import {
  cleanup,
  collector,
  makePod,
  readAll,
  startProvider,
  waitDuring,
  waitFor,
  within,
} from "./_helpers.ts";

const READ_LOOP = "while read l; do echo got:$l; done; echo eof";

/** A stdin the test writes to and ends. */
function input() {
  const stream = new TransformStream<Uint8Array, Uint8Array>();
  const writer = stream.writable.getWriter();
  return {
    readable: stream.readable,
    send: (text: string) => writer.write(new TextEncoder().encode(text)),
    end: () => writer.close(),
  };
}

Deno.test("attach streams stdout and stderr produced after it attached", async () => {
  const t = await startProvider();
  const pod = makePod([{
    name: "c",
    image: "x",
    command: ["sh", "-c", "echo early; while :; do echo tick; echo tock >&2; sleep 0.05; done"],
  }]);
  const ref = { namespace: "default", pod: pod.metadata!.name!, container: "c" };
  try {
    await t.provider.createPod(pod, {});
    await waitFor(
      "first ticks in the log",
      async () => (await readAll(await t.provider.getContainerLogs(ref, {}))).includes("tock"),
    );
    const out = collector();
    const err = collector();
    const session = new AbortController();
    const attached = t.provider.attachToContainer(ref, {
      io: { stdout: out.writable, stderr: err.writable, tty: false },
      signal: session.signal,
    });
    await waitDuring(
      attached,
      "live output",
      () => out.text().includes("tick\ntick\n") && err.text(),
    );
    session.abort();
    await within("the session to end", attached);
    assert.ok(!out.text().includes("early"), "output from before the attach is not replayed");
    assert.match(err.text(), /^(tock\n)+/);
    assert.equal(t.provider.runnerOf("default", ref.pod)!.live("c")!.instance.output.size, 0);
  } finally {
    await cleanup(t.provider, pod);
    await t.close();
  }
});

Deno.test("attach feeds stdin; the container's stdin outlives sessions without stdinOnce", async () => {
  const t = await startProvider();
  const pod = makePod([{
    name: "c",
    image: "x",
    stdin: true,
    command: ["sh", "-c", READ_LOOP],
  }]);
  const ref = { namespace: "default", pod: pod.metadata!.name!, container: "c" };
  try {
    await t.provider.createPod(pod, {});
    await waitFor("running", () => t.provider.runnerOf("default", ref.pod)?.live("c"));
    // The first session leaves by going away (signal), the second by ending its stdin.
    const first = input();
    const out1 = collector();
    const gone = new AbortController();
    const session1 = t.provider.attachToContainer(ref, {
      io: { stdin: first.readable, stdout: out1.writable, tty: false },
      signal: gone.signal,
    });
    await first.send("hello\n");
    await waitDuring(session1, "got:hello", () => out1.text() === "got:hello\n");
    gone.abort();
    await within("the first session to end", session1);
    const second = input();
    const out2 = collector();
    const session2 = t.provider.attachToContainer(ref, {
      io: { stdin: second.readable, stdout: out2.writable, tty: false },
    });
    await second.send("again\n");
    await waitDuring(session2, "got:again", () => out2.text() === "got:again\n");
    await second.end();
    // It ends with its stdin; the container keeps running.
    await within("the second session to end", session2);
    await new Promise((r) => setTimeout(r, 200));
    const status = (await t.provider.getPod("default", ref.pod, {}))!.status!;
    assert.ok(status.containerStatuses![0].state!.running, "still running after both sessions");
    const log = await readAll(await t.provider.getContainerLogs(ref, {}));
    assert.equal(log, "got:hello\ngot:again\n");
  } finally {
    await cleanup(t.provider, pod);
    await t.close();
  }
});

Deno.test("stdinOnce closes the container's stdin when the first session's stdin ends", async () => {
  const t = await startProvider();
  const pod = makePod([{
    name: "c",
    image: "x",
    stdin: true,
    stdinOnce: true,
    command: ["sh", "-c", READ_LOOP],
    // A mount: the runner (and the stdin holder) start in a private view where the host allows.
    volumeMounts: [{ name: "scratch", mountPath: `/vk-attach-${crypto.randomUUID().slice(0, 8)}` }],
  }], { restartPolicy: "Never", volumes: [{ name: "scratch", emptyDir: {} }] });
  const ref = { namespace: "default", pod: pod.metadata!.name!, container: "c" };
  try {
    await t.provider.createPod(pod, {});
    await waitFor("running", () => t.provider.runnerOf("default", ref.pod)?.live("c"));
    const stdin = input();
    const out = collector();
    const session = t.provider.attachToContainer(ref, {
      io: { stdin: stdin.readable, stdout: out.writable, tty: false },
    });
    await stdin.send("one\n");
    await waitDuring(session, "got:one", () => out.text() === "got:one\n");
    await stdin.end();
    // The container reads EOF, says so and ends, which ends the session.
    await within("the session to end with the container", session);
    assert.equal(out.text(), "got:one\neof\n");
    const done = await waitFor("Succeeded", async () => {
      const p = await t.provider.getPod("default", ref.pod, {});
      return p?.status?.phase === "Succeeded" && p;
    });
    assert.equal(done.status!.containerStatuses![0].state!.terminated!.exitCode, 0);
  } finally {
    await cleanup(t.provider, pod);
    await t.close();
  }
});

Deno.test("a re-adopted container with stdin still takes input (vkubelet restart)", async () => {
  const first = await startProvider();
  const pod = makePod([{ name: "c", image: "x", stdin: true, command: ["sh", "-c", READ_LOOP] }]);
  const ref = { namespace: "default", pod: pod.metadata!.name!, container: "c" };
  let second: Awaited<ReturnType<typeof startProvider>> | undefined;
  try {
    await first.provider.createPod(pod, {});
    await waitFor("running", () => first.provider.runnerOf("default", ref.pod)?.live("c"));
    await first.close({ keepState: true });
    await new Promise((r) => setTimeout(r, 200));
    second = await startProvider({ stateDir: first.stateDir });
    const status = (await second.provider.getPod("default", ref.pod, {}))!.status!;
    assert.ok(status.containerStatuses![0].state!.running, "stdin did not end with vkubelet");
    const stdin = input();
    const out = collector();
    const session = new AbortController();
    const attached = second.provider.attachToContainer(ref, {
      io: { stdin: stdin.readable, stdout: out.writable, tty: false },
      signal: session.signal,
    });
    await stdin.send("back\n");
    await waitDuring(attached, "got:back", () => out.text() === "got:back\n");
    session.abort();
    await within("the session to end", attached);
  } finally {
    if (second) {
      await cleanup(second.provider, pod);
      await second.close();
    } else await first.close();
  }
});

Deno.test("attach refuses tty containers and -t on a container without a terminal", async () => {
  const t = await startProvider();
  const pod = makePod([
    { name: "tty", image: "x", tty: true, stdin: true, command: ["sleep", "30"] },
    { name: "plain", image: "x", command: ["sleep", "30"] },
  ]);
  const ref = { namespace: "default", pod: pod.metadata!.name!, container: "tty" };
  try {
    await t.provider.createPod(pod, {});
    await waitFor("running", () => t.provider.runnerOf("default", ref.pod)?.live("plain"));
    await assert.rejects(
      t.provider.attachToContainer(ref, { io: { tty: true } }),
      (err) => isNotSupported(err) && /tty: true/.test(err.message),
    );
    await assert.rejects(
      t.provider.attachToContainer({ ...ref, container: "plain" }, { io: { tty: true } }),
      /attach without -t/,
    );
  } finally {
    await cleanup(t.provider, pod);
    await t.close();
  }
});

Deno.test("the output fan-out cuts off a subscriber that falls behind, not the others", async () => {
  const fanout = new OutputFanout();
  const slow = fanout.subscribe({ maxBufferedBytes: 10 });
  const fast = fanout.subscribe();
  const reader = fast.getReader();
  fanout.publish("stdout", new TextEncoder().encode("0123456789ab"));
  assert.equal(fanout.size, 1);
  await assert.rejects(slow.getReader().read(), /fell too far behind/);
  const chunk = await reader.read();
  assert.equal(new TextDecoder().decode(chunk.value!.data), "0123456789ab");
  fanout.close();
  assert.equal((await reader.read()).done, true);
  assert.equal((await fanout.subscribe().getReader().read()).done, true, "closed: ends at once");
});

Deno.test("a stop marker split across reads is held back from attach output", () => {
  const marker = new Uint8Array([0, 118, 107, 0]);
  assert.equal(prefixAtEnd(new Uint8Array([65, 66, 0, 118]), marker), 2);
  assert.equal(prefixAtEnd(new Uint8Array([65, 66, 0]), marker), 1);
  assert.equal(prefixAtEnd(new Uint8Array([65, 66, 67]), marker), 0);
  assert.equal(prefixAtEnd(new Uint8Array([65, 0, 118, 107]), marker), 3);
});
