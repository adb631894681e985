/**
 * Runs a PodController against the fakes, on a fake clock.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "../../../base/log.ts";
import { PodController, type PodControllerDeps } from "../../../core/pods/pod_controller.ts";
import { FakeClock, flush } from "../../fakes/clock.ts";
import { FakeApi } from "./_fake_api.ts";
import { FakeProvider } from "./_fake_provider.ts";

export const NODE = "vk-1";

export interface HarnessOptions {
  push?: boolean;
  syncOnRun?: boolean;
  deps?: Partial<PodControllerDeps>;
}

export function startController(options: HarnessOptions = {}) {
  const clock = new FakeClock();
  const api = new FakeApi({ syncOnRun: options.syncOnRun });
  const provider = new FakeProvider({ push: options.push, now: () => clock.now() });
  const controller = new PodController({
    api,
    provider,
    clock,
    log: getLogger(["vkubelet", "test"]),
    nodeName: NODE,
    workers: 4,
    nodeIps: () => ["192.168.1.2"],
    allocatable: () => ({ cpu: "8", memory: "16Gi" }),
    ...options.deps,
  });
  const abort = new AbortController();
  const running = controller.run(abort.signal);
  return {
    clock,
    api,
    provider,
    controller,
    /** Lets queued work run (and time pass, if asked). */
    async settle(ms = 0) {
      await flush();
      if (ms > 0) await clock.advance(ms);
      await flush();
    },
    async stop() {
      abort.abort();
      await running;
    },
  };
}

let serial = 0;

/** A pod bound to {@link NODE}. */
export function boundPod(
  name: string,
  extra: Partial<Pod["spec"]> = {},
  metadata: Pod["metadata"] = {},
): Pod {
  return {
    metadata: { name, namespace: "shop", uid: `uid-${name}-${++serial}`, ...metadata },
    spec: { nodeName: NODE, containers: [{ name: "main", image: "nginx" }], ...extra },
    status: {
      phase: "Pending",
      conditions: [{ type: "PodScheduled", status: "True" }],
      qosClass: "BestEffort",
    },
  };
}
