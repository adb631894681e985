/**
 * Shared set-up for the mock provider's tests: a provider on a fake clock and sample pods.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "../../../base/log.ts";
import { createProvider, type MockProvider } from "../../../providers/mock/mod.ts";
import { FakeClock } from "../../fakes/clock.ts";

/** A mock provider for node `vk-test` on a fake clock, with every notified pod recorded. */
export function mockProvider(config: unknown = undefined) {
  const clock = new FakeClock();
  const stop = new AbortController();
  const provider: MockProvider = createProvider(config, {
    nodeName: "vk-test",
    log: getLogger(["vkubelet", "test"]),
    clock,
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal: stop.signal,
  });
  const notified: Pod[] = [];
  provider.notifyPods((pod) => notified.push(pod));
  return { provider, clock, notified, options: { signal: stop.signal } };
}

/** A pod bound to `vk-test` with one container, or the containers given. */
export function samplePod(name = "web", extra: Partial<Pod["spec"]> = {}): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default", uid: `uid-${name}` },
    spec: {
      nodeName: "vk-test",
      containers: [{
        name: "app",
        image: "nginx:1.27",
        command: ["nginx"],
        env: [{ name: "A", value: "1" }],
      }],
      ...extra,
    },
  };
}

/** Collects a byte stream as text. */
export async function text(stream: ReadableStream<Uint8Array>): Promise<string> {
  let out = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) out += chunk;
  return out;
}
