import assert from "node:assert/strict";
import { Slicer } from "../../base/event_loop.ts";

/** Work without a wait, like an in-memory provider's. */
function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) { /* spin */ }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A slicer of 50 ms whose first slice has just begun (after a turn of its own). */
async function started(): Promise<Slicer> {
  const slicer = new Slicer(50);
  busy(60);
  const turn = slicer.take();
  assert.ok(turn, "60 ms of work in a 50 ms slice: a turn");
  await turn;
  return slicer;
}

Deno.test("a slicer asks for a turn of the event loop once a slice of work went by without one", async () => {
  const slicer = await started();
  busy(10);
  assert.equal(slicer.take(), undefined, "10 ms into a 50 ms slice: go on");
  busy(50);
  assert.ok(slicer.take(), "60 ms without a wait: a turn");
  slicer.stop();
});

Deno.test("work that waited on I/O between items goes on without a turn of its own", async () => {
  const slicer = await started();
  for (let i = 0; i < 3; i++) {
    // An item's request to the apiserver: the loop turned while it waited, longer than a slice.
    await sleep(60);
    assert.equal(slicer.take(), undefined, `item ${i}: the loop turned by itself`);
  }
  // Back to work that never waits: the slice runs out as before.
  busy(60);
  assert.ok(slicer.take(), "60 ms without a wait: a turn");
  slicer.stop();
});
