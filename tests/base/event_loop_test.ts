import assert from "node:assert/strict";
import { Slicer } from "../../base/event_loop.ts";

// A long slice, so that a pause of the machine under load (GC, another process) cannot use it up
// between two steps of a test.
const SLICE_MS = 200;

/** Work without a wait, like an in-memory provider's. */
function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) { /* spin */ }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A slicer whose first slice has just begun (after a turn of its own). */
async function started(): Promise<Slicer> {
  const slicer = new Slicer(SLICE_MS);
  busy(SLICE_MS + 10);
  const turn = slicer.take();
  assert.ok(turn, "more work than a slice without a wait: a turn");
  await turn;
  return slicer;
}

Deno.test("a slicer asks for a turn of the event loop once a slice of work went by without one", async () => {
  const slicer = await started();
  busy(10);
  assert.equal(slicer.take(), undefined, "10 ms into the slice: go on");
  busy(SLICE_MS);
  assert.ok(slicer.take(), "a whole slice without a wait: a turn");
  slicer.stop();
});

Deno.test("work that waited on I/O between items goes on without a turn of its own", async () => {
  const slicer = await started();
  for (let i = 0; i < 2; i++) {
    // An item's request to the apiserver: the loop turned while it waited, longer than a slice.
    await sleep(SLICE_MS + 10);
    assert.equal(slicer.take(), undefined, `item ${i}: the loop turned by itself`);
  }
  // Back to work that never waits: the slice runs out as before.
  busy(SLICE_MS + 10);
  assert.ok(slicer.take(), "a whole slice without a wait: a turn");
  slicer.stop();
});
