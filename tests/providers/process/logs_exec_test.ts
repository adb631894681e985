import assert from "node:assert/strict";
import { cleanup, collector, makePod, readAll, startProvider, waitFor } from "./_helpers.ts";
import { containerLogStream } from "../../../providers/process/streams/log_reader.ts";

Deno.test("logs honour tail, timestamps, since, limitBytes, previous and follow", async () => {
  const t = await startProvider();
  const script = 'echo "run $(cat n 2>/dev/null || echo 0)"; echo x >> n; echo one; echo two; ' +
    "sleep 0.1; echo err >&2; sleep 0.4; echo late; exit 1";
  const pod = makePod([{ name: "c", image: "x", command: ["sh", "-c", script] }], {
    restartPolicy: "OnFailure",
  });
  const ref = { namespace: "default", pod: pod.metadata!.name!, container: "c" };
  try {
    await t.provider.createPod(pod, {});
    // Follow the first instance: it ends when the instance does.
    await waitFor("first instance", () => t.provider.runnerOf("default", ref.pod)?.live("c"));
    const followed = await readAll(await t.provider.getContainerLogs(ref, { follow: true }));
    assert.equal(followed, "run 0\none\ntwo\nerr\nlate\n");
    await waitFor(
      "restart",
      async () =>
        (await t.provider.getPod("default", ref.pod, {}))?.status?.containerStatuses?.[0]
          .restartCount === 1,
    );
    const previous = await readAll(await t.provider.getContainerLogs(ref, { previous: true }));
    assert.equal(previous, "run 0\none\ntwo\nerr\nlate\n");
    await waitFor(
      "second instance output",
      async () => (await readAll(await t.provider.getContainerLogs(ref, {}))).includes("late"),
    );
    const tail = await readAll(await t.provider.getContainerLogs(ref, { tailLines: 2 }));
    assert.equal(tail, "err\nlate\n");
    const stamped = await readAll(await t.provider.getContainerLogs(ref, { timestamps: true }));
    const lines = stamped.trimEnd().split("\n");
    assert.equal(lines.length, 5);
    for (const line of lines) assert.match(line, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z /);
    // sinceTime at the time of "late" keeps only "late".
    const lateTime = new Date(lines[4].split(" ")[0].replace(/(\.\d{3})\d+Z$/, "$1Z"));
    const since = await readAll(await t.provider.getContainerLogs(ref, { sinceTime: lateTime }));
    assert.equal(since, "late\n");
    const limited = await readAll(await t.provider.getContainerLogs(ref, { limitBytes: 7 }));
    assert.equal(limited, "run x\no");
  } finally {
    await cleanup(t.provider, pod);
    await t.close();
  }
});

Deno.test("exec runs in the container's env and cwd with stdout, stderr and exit code", async () => {
  const t = await startProvider();
  const pod = makePod([{
    name: "c",
    image: "x",
    command: ["sleep", "30"],
    env: [{ name: "GREETING", value: "hi there" }],
  }]);
  const ref = { namespace: "default", pod: pod.metadata!.name!, container: "c" };
  try {
    await t.provider.createPod(pod, {});
    await waitFor("running", () => t.provider.runnerOf("default", ref.pod)?.live("c"));
    const out = collector();
    const err = collector();
    const stdin = new Blob(["from stdin"]).stream();
    const code = await t.provider.runInContainer(ref, {
      command: ["sh", "-c", 'echo "$GREETING"; pwd; cat; echo oops >&2; exit 7'],
      io: { stdin, stdout: out.writable, stderr: err.writable, tty: false },
    });
    assert.equal(code, 7);
    const work = t.provider.runnerOf("default", ref.pod)!.paths.work;
    assert.equal(out.text(), `hi there\n${work}\nfrom stdin`);
    assert.equal(err.text(), "oops\n");
  } finally {
    await cleanup(t.provider, pod);
    await t.close();
  }
});

async function* oneSize() {
  yield { width: 120, height: 40 };
}

Deno.test("exec with a TTY applies terminal resizes", async () => {
  const t = await startProvider();
  const pod = makePod([{ name: "c", image: "x", command: ["sleep", "30"] }]);
  const ref = { namespace: "default", pod: pod.metadata!.name!, container: "c" };
  try {
    await t.provider.createPod(pod, {});
    await waitFor("running", () => t.provider.runnerOf("default", ref.pod)?.live("c"));
    const out = collector();
    const code = await t.provider.runInContainer(ref, {
      command: ["sh", "-c", "sleep 0.5; stty size; exit 3"],
      io: { stdout: out.writable, tty: true, resize: oneSize() },
    });
    assert.equal(code, 3);
    assert.match(out.text(), /40 120/);
  } finally {
    await cleanup(t.provider, pod);
    await t.close();
  }
});

Deno.test("port-forward carries bytes to and from the pod's port", async () => {
  const t = await startProvider();
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const code =
    `import socket\ns=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n` +
    `s.bind(("127.0.0.1", ${port})); s.listen(1); print("listening", flush=True)\nc,_=s.accept(); d=c.recv(100); c.sendall(d.upper()); c.close()`;
  const pod = makePod([{ name: "echo", image: "x", command: ["python3", "-c", code] }]);
  try {
    await t.provider.createPod(pod, {});
    const ref = { namespace: "default", pod: pod.metadata!.name!, container: "echo" };
    await waitFor(
      "listening",
      async () => (await readAll(await t.provider.getContainerLogs(ref, {}))).includes("listening"),
    );
    const out = collector();
    await t.provider.portForward({ namespace: "default", name: pod.metadata!.name! }, {
      port,
      stream: { readable: new Blob(["ping bytes"]).stream(), writable: out.writable },
    });
    assert.equal(out.text(), "PING BYTES");
  } finally {
    await cleanup(t.provider, pod);
    await t.close();
  }
});

Deno.test("a sinceSeconds or sinceTime before 1970 means every line, not an error", async () => {
  const dir = await Deno.makeTempDir({ prefix: "vk-process-logs-" });
  try {
    await Deno.writeTextFile(
      `${dir}/0.log`,
      "2026-01-01T00:00:00.000000000Z stdout F one\n2026-01-01T00:00:01.000000000Z stdout F two\n",
    );
    const source = {
      path: `${dir}/0.log`,
      maxFiles: 1,
      isRunning: () => false,
      now: () => Date.parse("2026-01-01T00:00:02Z"),
      stopped: new AbortController().signal,
    };
    for (
      const options of [
        { sinceSeconds: 9_000_000_000_000 },
        { sinceSeconds: Number.MAX_SAFE_INTEGER },
        { sinceTime: new Date("1900-01-01T00:00:00Z") },
      ]
    ) {
      assert.equal(await readAll(await containerLogStream(source, options)), "one\ntwo\n");
    }
    const recent = await containerLogStream(source, { sinceSeconds: 1 });
    assert.equal(await readAll(recent), "two\n");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
