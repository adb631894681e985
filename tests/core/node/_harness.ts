/**
 * Starts the node side (health monitor, node controller, lease controller) on fakes, the way
 * `app/run.ts` wires it, and stops it again.
 * @module
 */
import { FakeClock, flush } from "../../fakes/clock.ts";
import {
  HealthMonitor,
  LeaseController,
  type LeaseControllerDeps,
  NodeController,
  type NodeControllerDeps,
} from "../../../core/node/mod.ts";
import { FakeNodeApi, FakeNodeProvider, type LogRecord, recordingLogger } from "./fakes.ts";

/** What a test gets back. */
export interface NodeSide {
  clock: FakeClock;
  api: FakeNodeApi;
  provider: FakeNodeProvider;
  health: HealthMonitor;
  node: NodeController;
  lease: LeaseController;
  records: LogRecord[];
  /** Aborts everything and waits until it has stopped. */
  stop(): Promise<void>;
}

/** Options to override; everything else uses fakes and defaults. */
export interface NodeSideOptions {
  clock?: FakeClock;
  api?: FakeNodeApi;
  provider?: FakeNodeProvider;
  node?: Partial<NodeControllerDeps>;
  lease?: Partial<LeaseControllerDeps>;
}

/** Starts the three parts and lets them register (the first ping, create, lease). */
export async function startNodeSide(options: NodeSideOptions = {}): Promise<NodeSide> {
  const clock = options.clock ?? new FakeClock();
  const api = options.api ?? new FakeNodeApi(() => clock.now());
  const provider = options.provider ?? new FakeNodeProvider();
  const { log, records } = recordingLogger();
  const health = new HealthMonitor({ provider, clock, log });
  const node = new NodeController({
    api,
    provider,
    clock,
    log,
    health,
    nodeName: "vk-test",
    version: "0.1.0",
    providerName: "mock",
    internalIp: "10.0.0.5",
    ...options.node,
  });
  const lease = new LeaseController({
    api,
    clock,
    log,
    health,
    nodeName: "vk-test",
    owner: node,
    ...options.lease,
  });
  const controller = new AbortController();
  const running = Promise.all([
    health.run(controller.signal),
    node.run(controller.signal),
    lease.run(controller.signal),
  ]);
  await flush();
  return {
    clock,
    api,
    provider,
    health,
    node,
    lease,
    records,
    async stop() {
      controller.abort();
      await running;
    },
  };
}

/** Advances the clock in steps of `step` ms until `ms` have passed. */
export async function advanceBy(clock: FakeClock, ms: number, step = 1_000): Promise<void> {
  for (let done = 0; done < ms; done += step) await clock.advance(Math.min(step, ms - done));
}
