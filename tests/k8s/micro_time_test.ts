import assert from "node:assert/strict";
import { formatMicroTime, formatTime, parseKubeTime } from "../../k8s/micro_time.ts";

Deno.test("MicroTime has exactly six fractional digits, in UTC", () => {
  const t = Date.UTC(2026, 2, 4, 5, 6, 7, 89);
  assert.equal(formatMicroTime(t), "2026-03-04T05:06:07.089000Z");
  assert.equal(formatMicroTime(new Date(t)), "2026-03-04T05:06:07.089000Z");
  assert.match(formatMicroTime(Date.now()), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
});

Deno.test("Time has whole seconds, and both forms parse back", () => {
  const t = Date.UTC(2026, 0, 1, 0, 0, 1, 500);
  assert.equal(formatTime(t), "2026-01-01T00:00:01Z");
  assert.equal(parseKubeTime("2026-01-01T00:00:01.500123Z"), t);
  assert.equal(parseKubeTime(formatMicroTime(t)), t);
  assert.throws(() => parseKubeTime("yesterday"), RangeError);
  assert.throws(() => formatMicroTime(new Date(NaN)), RangeError);
});

Deno.test("formatTime gives each second's text however many times it is asked, in any order", () => {
  const base = Date.UTC(2026, 11, 2, 7, 0, 0);
  // More seconds than it keeps, then the first ones again, and times within one second.
  for (let round = 0; round < 2; round++) {
    for (let s = 0; s < 300; s += 1) {
      const expected = new Date(base + s * 1000).toISOString().slice(0, 19) + "Z";
      assert.equal(formatTime(base + s * 1000 + 999), expected);
      assert.equal(formatTime(new Date(base + s * 1000)), expected);
    }
  }
  assert.equal(formatTime(-500), "1969-12-31T23:59:59Z");
  assert.throws(() => formatTime(NaN), RangeError);
});
