/**
 * ECI at many pods (issue 66 item 5, the eci part): DescribeContainerGroups and
 * DescribeContainerGroupEvents carry at most the 20 IDs Alibaba's published metadata allows per
 * call (`ContainerGroupIds`: "You can specify up to 20 IDs"; the emulator's validator refuses more),
 * so reading 45 groups is 3 calls, not 45 nor one refused call; and a read that ECI throttles
 * (`Throttling.User`) is retried with back-off and still answers every group.
 */
import assert from "node:assert/strict";
import { realClock } from "../../../base/clock.ts";
import { DESCRIBE_BATCH, EciApi } from "../../../providers/eci/client/api.ts";
import { parseEciConfig } from "../../../providers/eci/config.ts";
import { startEciEmulator } from "../../../tools/harness/eci/emulator.ts";
import { emulatorConfig, useTestCredentials } from "../../../tools/harness/eci/env.ts";

async function withApi(
  test: (
    api: EciApi,
    ids: string[],
    emu: Awaited<ReturnType<typeof startEciEmulator>>,
  ) => Promise<void>,
) {
  const restore = useTestCredentials();
  const emu = await startEciEmulator();
  try {
    const parsed = parseEciConfig(emulatorConfig(emu));
    assert.ok(parsed.ok);
    const api = new EciApi(parsed.config, realClock);
    const ids: string[] = [];
    for (let i = 0; i < 45; i++) {
      ids.push(
        await api.create({
          containerGroupName: `g-${i}`,
          clientToken: `batch-${i}`,
          container: [{ name: "m", image: "busybox" }] as never[],
        }),
      );
    }
    emu.calls.length = 0;
    await test(api, ids, emu);
    assert.deepEqual(emu.strays, [], "every request matched the published metadata");
  } finally {
    await emu.stop();
    restore();
  }
}

Deno.test("45 groups are described in 3 calls of at most 20 IDs, as the API allows", async () => {
  await withApi(async (api, ids, emu) => {
    const found = await api.describe(ids);
    assert.deepEqual([...found.keys()].sort(), [...ids].sort());
    assert.deepEqual(emu.calls, Array(3).fill("DescribeContainerGroups"));
    assert.equal(DESCRIBE_BATCH, 20);
    const events = await api.events(ids);
    assert.equal(events.size, 45);
    assert.deepEqual(emu.calls.slice(3), Array(3).fill("DescribeContainerGroupEvents"));
  });
});

Deno.test("the emulator refuses a describe of more than 20 IDs, naming the limit", async () => {
  await withApi(async (_api, ids, emu) => {
    const url = new URL(emu.endpoint);
    url.search = new URLSearchParams({
      Action: "DescribeContainerGroups",
      Version: "2018-08-08",
      RegionId: emu.regionId,
      ContainerGroupIds: JSON.stringify(ids.slice(0, 21)),
    }).toString();
    const answer = await fetch(url);
    const body = await answer.json();
    assert.equal(body.Code, "InvalidParameter");
    assert.match(body.Message, /ContainerGroupIds: 21 IDs; the metadata allows up to 20/);
    emu.strays.length = 0;
  });
});

Deno.test("a throttled describe is retried with back-off and still reads every group", async () => {
  await withApi(async (api, ids, emu) => {
    emu.throttle(3);
    const started = Date.now();
    const found = await api.describe(ids);
    assert.equal(found.size, 45);
    // Three throttled answers, then the three batches.
    assert.deepEqual(emu.calls, Array(6).fill("DescribeContainerGroups"));
    // The back-off waits at least half of 200, 400 and 800 ms between the attempts.
    assert.ok(Date.now() - started >= 700, `retried after ${Date.now() - started} ms`);
  });
});
