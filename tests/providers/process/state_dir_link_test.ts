/**
 * A state directory reached through a symlink (an admin's /var/lib/vkubelet linked to another
 * disk) still runs pods in their view: the view's walks compare the kernel's paths with the
 * provider's, so the provider takes the directory by its real path.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { probeMountNamespace } from "../../../providers/process/launch/mount_ns.ts";
import { cleanup, makePod, startProvider, waitFor } from "./_helpers.ts";

const views = Deno.uid() === 0 ? await probeMountNamespace() : { ok: false };

Deno.test({
  name: "a state directory given through a symlink runs pods in their view",
  ignore: !views.ok,
  fn: async () => {
    // Outside /tmp (each container has its own), the link in the middle of the path, as a
    // checkout whose cache directory is a link.
    const cache = new URL("../../../.cache/", import.meta.url).pathname;
    await Deno.mkdir(cache, { recursive: true });
    const real = await Deno.makeTempDir({ dir: cache, prefix: "vk-state-real-" });
    const link = `${real}-link`;
    await Deno.symlink(real, link);
    const t = await startProvider({
      stateDir: join(link, "process"),
      config: { mountNamespace: "required" },
    });
    const pod = makePod([{
      name: "c",
      image: "x",
      command: ["sh", "-c", "echo in-view; sleep 30"],
    }]);
    try {
      await t.provider.createPod(pod, {});
      const status = await waitFor("the container running or refused", async () => {
        const s = (await t.provider.getPod("default", pod.metadata!.name!, {}))?.status
          ?.containerStatuses?.[0];
        return (s?.state?.running || s?.state?.terminated ||
          s?.state?.waiting?.reason?.endsWith("Error")) && s;
      });
      assert.ok(status.state?.running, JSON.stringify(status.state));
      assert.ok(Deno.statSync(join(real, "process", "pods")).isDirectory);
    } finally {
      await cleanup(t.provider, pod);
      await t.close();
      await Deno.remove(link).catch(() => {});
      await Deno.remove(real, { recursive: true }).catch(() => {});
    }
  },
});
