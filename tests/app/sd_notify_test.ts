import assert from "node:assert/strict";
import { getLogger } from "../../base/log.ts";
import { FakeClock } from "../../base/fake_clock.ts";
import { feedWatchdog, watchdogPeriodMs } from "../../app/sd_notify.ts";

const log = getLogger(["vkubelet", "test", "sd_notify"]);

Deno.test("the watchdog period is systemd's WATCHDOG_USEC, for this process only (sd_watchdog_enabled)", () => {
  assert.equal(watchdogPeriodMs({}, 42), undefined);
  assert.equal(watchdogPeriodMs({ WATCHDOG_USEC: "30000000" }, 42), 30_000);
  assert.equal(watchdogPeriodMs({ WATCHDOG_USEC: "30000000", WATCHDOG_PID: "42" }, 42), 30_000);
  // A child that inherited its parent's variables does not feed the parent's watchdog.
  assert.equal(watchdogPeriodMs({ WATCHDOG_USEC: "30000000", WATCHDOG_PID: "41" }, 42), undefined);
  assert.throws(
    () => watchdogPeriodMs({ WATCHDOG_USEC: "30s" }, 42),
    /WATCHDOG_USEC=30s .*WatchdogSec=/,
  );
  assert.throws(() => watchdogPeriodMs({ WATCHDOG_USEC: "0" }, 42), /WATCHDOG_USEC=0/);
  assert.throws(
    () => watchdogPeriodMs({ WATCHDOG_USEC: "1", WATCHDOG_PID: "x" }, 42),
    /WATCHDOG_PID=x/,
  );
});

Deno.test("WATCHDOG=1 goes out at once and every half period until the signal aborts", async () => {
  const clock = new FakeClock();
  const sent: number[] = [];
  const stop = new AbortController();
  const feeding = feedWatchdog({
    env: { WATCHDOG_USEC: "30000000", WATCHDOG_PID: "7" },
    pid: 7,
    clock,
    log,
    signal: stop.signal,
    notify: (state) => {
      assert.equal(state, "WATCHDOG=1");
      sent.push(clock.monotonic());
      return Promise.resolve();
    },
  });
  await clock.advance(0);
  assert.deepEqual(sent, [0]);
  await clock.advance(45_000);
  assert.deepEqual(sent, [0, 15_000, 30_000, 45_000]);
  stop.abort();
  await feeding;
  await clock.advance(60_000);
  assert.equal(sent.length, 4);
});

Deno.test("without WatchdogSec, or with another process's, nothing is sent", async () => {
  for (
    const env of [{}, { WATCHDOG_USEC: "30000000", WATCHDOG_PID: "8" }, { WATCHDOG_USEC: "x" }]
  ) {
    const sent: string[] = [];
    await feedWatchdog({
      env,
      pid: 7,
      clock: new FakeClock(),
      log,
      signal: new AbortController().signal,
      notify: (state) => Promise.resolve(void sent.push(state)),
    });
    assert.deepEqual(sent, [], JSON.stringify(env));
  }
});
