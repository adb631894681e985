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
