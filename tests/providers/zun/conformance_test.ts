/**
 * The zun provider runs the provider conformance suite (provider/testing) against a real Zun
 * (zun-api and zun-compute 18.0.0 on podman, keystone, placement: tools/harness/zun.ts), as
 * the `demo` user, on the real clock. The suite's pod has one container, so it runs as a plain
 * Zun container, logs and exec included (a capsule's 501s are checked in provider_test.ts).
 * Every instance the suite starts shares the stack, as a restarted vkubelet would.
 */
import { realClock } from "../../../base/clock.ts";
import { conformancePod, runProviderConformance } from "../../../provider/testing/mod.ts";
import { createProvider } from "../../../providers/zun/mod.ts";
import { useZun, zunSkipReason } from "../../../tools/harness/zun.ts";
import { withEnv } from "./_env.ts";

const skip = await zunSkipReason();

Deno.test({
  name: "the zun provider keeps the provider contract against zun-api 18.0.0",
  ignore: skip !== undefined,
  async fn(t) {
    const zun = await useZun();
    const restore = withEnv(zun.env);
    try {
      await runProviderConformance(t, {
        nodeName: `vk-conformance-${crypto.randomUUID().slice(0, 6)}`,
        clock: realClock,
        timeoutMs: 90_000,
        podFor: (name) => {
          const pod = conformancePod(name);
          pod.spec!.containers[0].image = "localhost/busybox:latest";
          return pod;
        },
        create: (deps) => createProvider({ statusInterval: "500ms", exposePorts: false }, deps),
      });
    } finally {
      restore();
      await zun.stop();
    }
  },
});
