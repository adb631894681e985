import assert from "node:assert/strict";
import type { TokenRequest } from "kubernetes-types/authentication/v1.d.ts";
import { FakeClock } from "../../fakes/clock.ts";
import type { VolumeSource } from "../../../providers/process/volumes/volumes.ts";
import { cleanup, makePod, startProvider, waitFor } from "./_helpers.ts";

interface TokenApi {
  calls: number[];
  failing: boolean;
  issued: number;
  source: VolumeSource;
}

/** A TokenRequest API whose answers the test controls, recording when it was asked. */
function tokenApi(clock: FakeClock): TokenApi {
  const api: TokenApi = {
    calls: [] as number[],
    failing: false,
    issued: 0,
    source: {
      getConfigMap: () => Promise.resolve(undefined),
      getSecret: () => Promise.resolve(undefined),
      createToken: (_ns: string, _sa: string, request: TokenRequest): Promise<TokenRequest> => {
        api.calls.push(clock.now());
        if (api.failing) return Promise.reject(new Error("the apiserver is unavailable"));
        api.issued++;
        const ttl = request.spec.expirationSeconds ?? 3600;
        return Promise.resolve({
          spec: request.spec,
          status: {
            token: `token-${api.issued}`,
            expirationTimestamp: new Date(clock.now() + ttl * 1000).toISOString(),
          },
        });
      },
    },
  };
  return api;
}

Deno.test("a projected token is rewritten at 80 % of its lifetime; a failing refresh backs off and keeps the old token", async () => {
  const clock = new FakeClock(Date.now());
  const api = tokenApi(clock);
  // Volumes are re-read only hourly: the refresh must come from the token's own schedule.
  const t = await startProvider({
    clock,
    volumeSource: api.source,
    config: { volumeSyncInterval: "1h", mountNamespace: "off" },
  });
  const pod = makePod([{ name: "c", image: "x", command: ["sleep", "30"] }], {
    volumes: [{
      name: "sa",
      projected: { sources: [{ serviceAccountToken: { path: "token", expirationSeconds: 600 } }] },
    }],
  });
  const runner = () => t.provider.runnerOf("default", pod.metadata!.name!)!;
  const token = () => Deno.readTextFile(`${runner().paths.volume("sa")}/token`).catch(() => "");
  /** Advances the clock and lets the pod's loop finish what it woke for. */
  const advance = async (ms: number) => {
    await clock.advance(ms);
    await waitFor("the pod loop to sleep again", () => clock.pending > 0, 5000);
    await new Promise((r) => setTimeout(r, 20));
  };
  try {
    const start = clock.now();
    await t.provider.createPod(pod, {});
    await waitFor("the first token", async () => (await token()) === "token-1", 5000);
    await advance(479_000);
    assert.equal(await token(), "token-1", "not refreshed before 80 % of 600 s");
    assert.equal(api.calls.length, 1);
    await advance(2_000);
    await waitFor("the refreshed token", async () => (await token()) === "token-2", 5000);
    assert.ok(api.calls[1] - start >= 480_000 && api.calls[1] - start <= 481_000);

    // The next refresh fails: the old token stays, attempts back off (1 s, 2 s, 4 s, ...).
    api.failing = true;
    const secondExpires = api.calls[1] + 600_000;
    await advance(api.calls[1] + 480_000 - clock.now());
    await waitFor("the failing refresh", () => api.calls.length === 3, 5000);
    for (let i = 0; i < 32; i++) await advance(500);
    const failures = api.calls.slice(2);
    const gaps = failures.slice(1).map((at, i) => at - failures[i]);
    assert.ok(failures.length >= 4 && failures.length <= 6, `attempts at ${gaps} ms apart`);
    assert.ok(gaps[0] >= 1000, `first retry after ${gaps[0]} ms`);
    for (let i = 1; i < gaps.length; i++) {
      assert.ok(gaps[i] >= 1.5 * gaps[i - 1], `retries back off: ${gaps.join(", ")} ms`);
    }
    assert.equal(await token(), "token-2", "the old token is kept while refreshes fail");
    assert.equal(
      (await t.provider.getPod("default", pod.metadata!.name!, {}))?.status?.phase,
      "Running",
    );

    // The API recovers: the next attempt writes a new token before the old one expires.
    api.failing = false;
    for (let i = 0; i < 40 && (await token()) === "token-2"; i++) await advance(1_000);
    assert.equal(await token(), "token-3");
    assert.ok(clock.now() < secondExpires, "renewed before the old token expired");
  } finally {
    await cleanup(t.provider, pod);
    await t.close();
  }
});
