import assert from "node:assert/strict";
import {
  ContainerLog,
  CriLineSplitter,
  formatCriRecord,
  normalizeLogTime,
  parseCriRecord,
  PodLogDir,
  readContainerLog,
  rotationStamp,
} from "../../provider/mod.ts";
import { FakeClock } from "../../base/fake_clock.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const target = { namespace: "ns1", pod: "web", uid: "0a1b-2c", container: "app", restartCount: 0 };

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "pod-logs-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function logDir(
  dir: string,
  clock: FakeClock,
  over: Partial<{ maxBytes: number; rotationIntervalMs: number }> = {},
) {
  return new PodLogDir({
    dir: `${dir}/pods`,
    linkDir: `${dir}/containers`,
    maxBytes: over.maxBytes ?? 10 << 20,
    maxFiles: 5,
    clock,
    nodeName: "node-a",
    // The naming and compression tests rotate as often as the size asks.
    rotationIntervalMs: over.rotationIntervalMs ?? 0,
  });
}

function texts(parts: { text: Uint8Array; partial: boolean }[]): [string, boolean][] {
  return parts.map((p) => [dec.decode(p.text), p.partial]);
}

Deno.test("a record is written as <RFC3339Nano> <stream> <P|F> <text> and parses back", () => {
  const record = { time: "2026-01-01T00:00:00.123456789Z", stream: "stderr" as const };
  const bytes = formatCriRecord({ ...record, partial: true, text: enc.encode("a b c") });
  assert.equal(dec.decode(bytes), "2026-01-01T00:00:00.123456789Z stderr P a b c\n");
  const parsed = parseCriRecord(dec.decode(bytes).trimEnd());
  assert.equal(parsed?.stream, "stderr");
  assert.equal(parsed?.partial, true);
  assert.equal(dec.decode(parsed!.text), "a b c");
  assert.equal(parseCriRecord("not a record"), undefined);
  assert.equal(parseCriRecord("2026-01-01T00:00:00Z stdin F x"), undefined);
});

Deno.test("output is cut at newlines, \\r\\n loses its \\r, the unfinished rest ends as P", () => {
  const split = new CriLineSplitter();
  assert.deepEqual(texts(split.push(enc.encode("one\r\ntwo\nthr"))), [["one", false], [
    "two",
    false,
  ]]);
  assert.deepEqual(texts(split.push(enc.encode("ee\n\n"))), [["three", false], ["", false]]);
  assert.deepEqual(texts(split.push(enc.encode("tail"))), []);
  assert.deepEqual(texts(split.end()), [["tail", true]]);
  assert.deepEqual(texts(split.end()), []);
});

Deno.test("a line longer than 16 KiB is written in 16 KiB parts marked P, its rest F", () => {
  const split = new CriLineSplitter();
  const long = "x".repeat(16 * 1024 * 2 + 5);
  const parts = split.push(enc.encode(`${long}\n`));
  assert.deepEqual(parts.map((p) => [p.text.length, p.partial]), [
    [16384, true],
    [16384, true],
    [5, false],
  ]);
  // Exactly the limit is one F record, as containerd cuts only past it.
  const exact = split.push(enc.encode(`${"y".repeat(16384)}\n`));
  assert.deepEqual(exact.map((p) => [p.text.length, p.partial]), [[16384, false]]);
  // A long line without its newline yet is cut as it comes.
  const early = split.push(enc.encode("z".repeat(16385)));
  assert.deepEqual(early.map((p) => [p.text.length, p.partial]), [[16384, true]]);
});

Deno.test("times from backends compare as the kubelet writes them", () => {
  assert.equal(normalizeLogTime("2026-01-02T03:04:05Z"), "2026-01-02T03:04:05.000000000Z");
  assert.equal(normalizeLogTime("2026-01-02T03:04:05.5Z"), "2026-01-02T03:04:05.500000000Z");
  assert.equal(
    normalizeLogTime("2026-01-02T05:04:05.123456789+02:00"),
    "2026-01-02T03:04:05.123456789Z",
  );
  assert.equal(normalizeLogTime("yesterday"), undefined);
});

Deno.test("the log is at <dir>/<ns>_<pod>_<uid>/<container>/<restart>.log, linked as the kubelet links it", async () => {
  await withDir(async (dir) => {
    const logs = logDir(dir, new FakeClock());
    const log = await logs.open({ ...target, restartCount: 2, containerId: "containerd://abc123" });
    await log.write("stdout", enc.encode("hi"));
    await log.close();
    const path = `${dir}/pods/ns1_web_0a1b-2c/app/2.log`;
    assert.equal(await Deno.readTextFile(path), "2026-01-01T00:00:00.000000000Z stdout F hi\n");
    assert.equal(await Deno.readLink(`${dir}/containers/web_ns1_app-abc123.log`), path);
  });
});

Deno.test("rotation renames to <n>.log.<YYYYMMDD-hhmmss>, gzips older files and keeps max-files", async () => {
  await withDir(async (dir) => {
    const clock = new FakeClock(Date.UTC(2026, 4, 6, 7, 8, 9));
    const line = "z".repeat(60); // a record of 100 bytes
    const log = await logDir(dir, clock, { maxBytes: 250 }).open(target);
    for (let i = 0; i < 30; i++) {
      await log.write("stdout", enc.encode(`${line}${String(i).padStart(2, "0")}`));
      clock.jump(400); // a rotation at most every second
    }
    await log.close();
    const podDir = `${dir}/pods/ns1_web_0a1b-2c/app`;
    const names = (await Array.fromAsync(Deno.readDir(podDir))).map((e) => e.name).sort();
    // max-files 5: the current file, the newest rotated one as it is, three compressed.
    assert.equal(names.length, 5, names.join(" "));
    assert.equal(names.filter((n) => n.endsWith(".gz")).length, 3, names.join(" "));
    assert.ok(names.includes("0.log"));
    assert.ok(names.every((n) => /^0\.log(\.\d{8}-\d{6}(\.gz)?)?$/.test(n)), names.join(" "));
    // What is kept reads back in order, ending with the last line written.
    const records = await readContainerLog(`${podDir}/0.log`);
    const numbers = records.map((r) => Number(dec.decode(r.text).slice(60)));
    assert.deepEqual(numbers, numbers.toSorted((a, b) => a - b));
    assert.equal(numbers.at(-1), 29);
    assert.ok(numbers.length >= 8, `only ${numbers.length} lines kept`);
  });
});

Deno.test("a log is not rotated before its file has been current for 10 s, so an agent polling *.log sees every file", async () => {
  await withDir(async (dir) => {
    const clock = new FakeClock(Date.UTC(2026, 4, 6, 7, 8, 9));
    const logs = new PodLogDir({
      dir: `${dir}/pods`,
      linkDir: "",
      maxBytes: 250,
      maxFiles: 5,
      clock,
      nodeName: "node-a",
    });
    const log = await logs.open(target);
    const podDir = `${dir}/pods/ns1_web_0a1b-2c/app`;
    const rotated = async () =>
      (await Array.fromAsync(Deno.readDir(podDir))).filter((e) => e.name !== "0.log").length;
    // A burst (a mirror catching up): 20 records of 100 bytes within 9.5 s stay in one file.
    for (let i = 0; i < 20; i++) {
      await log.write("stdout", enc.encode(`${"z".repeat(60)}${String(i).padStart(2, "0")}`));
      clock.jump(500);
    }
    assert.equal(await rotated(), 0, "a file younger than 10 s was rotated away");
    await log.write("stdout", enc.encode("after 10 s"));
    assert.equal(await rotated(), 1, "the file is rotated once it is 10 s old");
    await log.close();
  });
});

Deno.test("a second rotation within one second waits for the next second instead of overwriting", async () => {
  await withDir(async (dir) => {
    const clock = new FakeClock(Date.UTC(2026, 4, 6, 7, 8, 9));
    const log = await logDir(dir, clock, { maxBytes: 100 }).open(target);
    for (let i = 0; i < 6; i++) {
      await log.write("stdout", enc.encode(`line ${i} ${"p".repeat(40)}`));
    }
    await log.close();
    const records = await readContainerLog(log.path);
    assert.equal(records.length, 6, "no line may be lost to a same-second rotation");
    assert.equal(rotationStamp(Date.UTC(2026, 4, 6, 7, 8, 9)), "20260506-070809");
  });
});

Deno.test("a record cut short by a crash is dropped on open and the log resumes after the last whole one", async () => {
  await withDir(async (dir) => {
    const clock = new FakeClock();
    const logs = logDir(dir, clock);
    const first = await logs.open(target);
    await first.write("stdout", enc.encode("a"), { time: "2026-01-01T00:00:01.000000000Z" });
    await first.write("stdout", enc.encode("b"), { time: "2026-01-01T00:00:02.000000000Z" });
    await first.write("stderr", enc.encode("c"), { time: "2026-01-01T00:00:02.000000000Z" });
    await first.close();
    const path = logs.logPath(target);
    await Deno.writeTextFile(path, "2026-01-01T00:00:03.000000000Z stdout F tor", { append: true });

    const again = await logs.open(target);
    assert.deepEqual(again.resumePoint(), { time: "2026-01-01T00:00:02.000000000Z", count: 2 });
    await again.write("stdout", enc.encode("d"), { time: "2026-01-01T00:00:04.000000000Z" });
    assert.deepEqual(again.resumePoint(), { time: "2026-01-01T00:00:04.000000000Z", count: 1 });
    await again.close();
    const lines = (await Deno.readTextFile(path)).split("\n").filter((l) => l);
    assert.deepEqual(lines.map((l) => l.split(" ").slice(1).join(" ")), [
      "stdout F a",
      "stdout F b",
      "stderr F c",
      "stdout F d",
    ]);
  });
});

Deno.test("an empty log has no resume point; a file is never rewritten, only appended to", async () => {
  await withDir(async (dir) => {
    const logs = logDir(dir, new FakeClock());
    const log = await logs.open(target);
    assert.equal(log.resumePoint(), undefined);
    await log.write("stdout", enc.encode("x"));
    const inode = (await Deno.stat(log.path)).ino;
    await log.close();
    const again = await ContainerLog.open(log.path, logs.options);
    await again.write("stdout", enc.encode("y"));
    await again.close();
    assert.equal((await Deno.stat(log.path)).ino, inode);
    assert.equal((await readContainerLog(log.path)).length, 2);
  });
});

Deno.test("a pod's directory and links go when it is removed; prune removes only this node's", async () => {
  await withDir(async (dir) => {
    const logs = logDir(dir, new FakeClock());
    await (await logs.open(target)).close();
    await (await logs.open({ ...target, pod: "kept", uid: "ffff" })).close();
    const other = new PodLogDir({ ...logs.options, nodeName: "node-b" });
    await (await other.open({ ...target, pod: "theirs", uid: "eeee" })).close();

    assert.deepEqual(await logs.prune(new Set(["ffff"])), ["0a1b-2c"]);
    const pods = (await Array.fromAsync(Deno.readDir(`${dir}/pods`))).map((e) => e.name).sort();
    assert.deepEqual(pods, ["ns1_kept_ffff", "ns1_theirs_eeee"]);
    const links = (await Array.fromAsync(Deno.readDir(`${dir}/containers`))).map((e) => e.name);
    assert.equal(links.length, 2);
    assert.ok(links.every((l) => !l.startsWith("web_")));

    await logs.removePod({ namespace: "ns1", pod: "kept", uid: "ffff" });
    await assert.rejects(Deno.stat(`${dir}/pods/ns1_kept_ffff`), Deno.errors.NotFound);
  });
});

Deno.test("max-files below 2 is refused as the kubelet refuses it", () => {
  assert.throws(
    () =>
      new PodLogDir({ dir: "/x", maxBytes: 1, maxFiles: 1, clock: new FakeClock(), nodeName: "n" }),
    /containerLogMaxFiles must be an integer greater than 1/,
  );
});
