/**
 * PolledFeeds: many readers fed by one loop that runs only while someone reads; what a reader
 * was handed before it left is still read, and nothing is handed to it after.
 * @module
 */
import assert from "node:assert/strict";
import { PolledFeeds } from "../../base/polled_feeds.ts";

const decoder = new TextDecoder();

async function readAll(stream: ReadableStream<Uint8Array>): Promise<string> {
  let text = "";
  for await (const chunk of stream) text += decoder.decode(chunk);
  return text;
}

/** A loop that counts its starts and waits for its signal. */
function waitingLoop() {
  const state = { starts: 0, aborted: 0 };
  const poll = (signal: AbortSignal) => {
    state.starts++;
    return new Promise<void>((resolve) => {
      signal.addEventListener("abort", () => {
        state.aborted++;
        resolve();
      }, { once: true });
    });
  };
  return { state, poll };
}

Deno.test("the loop starts with the first reader, once for many, and stops with the last", async () => {
  const { state, poll } = waitingLoop();
  const feeds = new PolledFeeds<{ name: string }>({ poll });
  const a = { name: "a" };
  const b = { name: "b" };
  const stopA = new AbortController();
  const stopB = new AbortController();
  const readA = readAll(feeds.join(a, stopA.signal));
  const readB = readAll(feeds.join(b, stopB.signal));
  assert.equal(state.starts, 1, "one loop for two readers");
  assert.deepEqual(feeds.members, [a, b]);
  feeds.push(a, "one\n", "two\n");
  feeds.push(b, "three\n");
  stopA.abort();
  assert.equal(await readA, "one\ntwo\n", "what was pushed before leaving is read");
  feeds.push(a, "late\n");
  assert.equal(feeds.has(a), false);
  assert.equal(state.aborted, 0, "the loop stopped while b still reads");
  stopB.abort();
  assert.equal(await readB, "three\n");
  await feeds.idle();
  assert.equal(state.aborted, 1);
  assert.deepEqual(feeds.members, []);

  // A new reader starts a new loop.
  const again = new AbortController();
  const readC = readAll(feeds.join({ name: "c" }, again.signal));
  assert.equal(state.starts, 2);
  again.abort();
  assert.equal(await readC, "");
  await feeds.idle();
});

Deno.test("a reader that cancels leaves, telling where it was, and a signal already aborted adds none", async () => {
  const left: [string, number][] = [];
  const { state, poll } = waitingLoop();
  const feeds = new PolledFeeds<string>({ poll, left: (m, i) => left.push([m, i]) });
  const signal = new AbortController().signal;
  const x = feeds.join("x", signal);
  const y = feeds.join("y", signal);
  await y.cancel();
  assert.deepEqual(left, [["y", 1]]);
  assert.deepEqual(feeds.members, ["x"]);
  await x.cancel();
  assert.deepEqual(left, [["y", 1], ["x", 0]]);
  await feeds.idle();
  assert.equal(state.aborted, 1);

  const aborted = AbortSignal.abort();
  assert.equal(await readAll(feeds.join("z", aborted)), "");
  assert.deepEqual(feeds.members, []);
  assert.equal(state.starts, 1, "no loop for a reader that never joined");
});

Deno.test("a loop that returns while readers remain is started again", async () => {
  let starts = 0;
  const feeds = new PolledFeeds<string>({
    poll: async (signal) => {
      starts++;
      if (starts < 3) return; // ends at once, twice
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    },
  });
  const stop = new AbortController();
  const read = readAll(feeds.join("r", stop.signal));
  for (let i = 0; i < 10 && starts < 3; i++) await new Promise((r) => setTimeout(r, 0));
  assert.equal(starts, 3);
  feeds.push("r", "still here\n");
  stop.abort();
  assert.equal(await read, "still here\n");
  await feeds.idle();
});
