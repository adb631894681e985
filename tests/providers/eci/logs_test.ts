/**
 * `kubectl logs -f` on ECI polls DescribeContainerLog: lines written after the stream opened
 * arrive once each, in order, without timestamps unless asked, and the stream ends when its
 * signal aborts.
 */
import assert from "node:assert/strict";
import { eciPod, startProviderOnEmulator } from "../../../tools/harness/eci/env.ts";

Deno.test("a followed ECI log brings new lines once each and ends with its signal", async () => {
  const env = await startProviderOnEmulator();
  try {
    const pod = eciPod("talker", {
      containers: [{ name: "main", image: "busybox", command: ["sh", "-c", "echo first"] }],
    });
    await env.provider.createPod(pod, {});
    const [group] = env.emu.groups.values();
    const stop = new AbortController();
    const stream = await env.provider.getContainerLogs(
      { namespace: "team-a", pod: "talker", container: "main" },
      { follow: true, signal: stop.signal },
    );
    let text = "";
    const reading = (async () => {
      for await (const chunk of stream.pipeThrough(new TextDecoderStream())) text += chunk;
    })();
    await env.eventually("the first line", () => text === "first\n");
    env.emu.writeLog(group.id, "main", ["second", "third"]);
    await env.eventually("the new lines", () => text.endsWith("third\n"));
    env.emu.writeLog(group.id, "main", ["fourth"]);
    await env.eventually("the fourth line", () => text.endsWith("fourth\n"));
    stop.abort();
    await reading;
    assert.equal(text, "first\nsecond\nthird\nfourth\n");
    assert.deepEqual(env.emu.strays, []);
  } finally {
    await env.close();
  }
});
