/**
 * The zun provider's backend for the kit's RemotePods: a pod with one container and no init
 * containers runs as a plain Zun container (./client/containers.ts: logs, exec, stats, a live
 * status), any other pod as a capsule (./client/capsules.ts: one network namespace for its
 * containers). A run says which it is in its handle, so a pod keeps the kind it was made as (a
 * single-container pod adopted from a capsule made by an earlier vkubelet stays a capsule until
 * it is made again).
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type {
  ProviderDeps,
  RemoteBackend,
  RemoteMakeOptions,
  RemoteRead,
  RemoteRun,
} from "../../provider/mod.ts";
import { ZunCapsules, type ZunCapsulesOptions } from "./client/capsules.ts";
import { ZunContainers } from "./client/containers.ts";
import { runsAsContainer } from "./request/container.ts";
import type { ZunConfig } from "./config.ts";
import type { ZunHandle } from "./status.ts";
import type { ZunApi } from "./client/zun_api.ts";

/** Which kind a pod's run is: its handle's, else by the pod's shape. */
export function kindOf(pod: Pod, run?: RemoteRun<ZunHandle>): ZunHandle["kind"] {
  return run?.handle?.kind ?? (runsAsContainer(pod) ? "container" : "capsule");
}

/** Capsules and plain containers as one backend; see the module doc. */
export class ZunBackend implements RemoteBackend<ZunHandle> {
  /** The capsules (multi-container pods). */
  readonly capsules: ZunCapsules;
  /** The plain containers (single-container pods). */
  readonly containers: ZunContainers;

  /** The backend of a provider with `config`. */
  static of(config: ZunConfig, deps: ProviderDeps, api: ZunApi): ZunBackend {
    return new ZunBackend({
      ...deps,
      api,
      exposePorts: config.exposePorts,
      secretEnv: config.secretEnv,
      deleteTimeoutMs: config.deleteTimeout,
      sleep: (ms, signal) => deps.clock.sleep(ms, signal),
      now: () => deps.clock.now(),
    });
  }

  constructor(options: ZunCapsulesOptions) {
    this.capsules = new ZunCapsules(options);
    this.containers = new ZunContainers(options);
  }

  async list(signal: AbortSignal): Promise<RemoteRun<ZunHandle>[]> {
    const [capsules, containers] = await Promise.all([
      this.capsules.list(signal),
      this.containers.list(signal),
    ]);
    return [...capsules as RemoteRun<ZunHandle>[], ...containers];
  }

  /** One capsule listing and one container listing a poll, whatever the number of pods. */
  async readMany(
    reads: RemoteRead<ZunHandle>[],
    signal: AbortSignal,
  ): Promise<(RemoteRun<ZunHandle> | undefined)[]> {
    const capsuleReads = reads.filter((r) => kindOf(r.pod, r.run) === "capsule");
    const containerReads = reads.filter((r) => kindOf(r.pod, r.run) === "container");
    const [capsules, containers] = await Promise.all([
      capsuleReads.length ? this.capsules.readMany(capsuleReads, signal) : [],
      containerReads.length ? this.containers.readMany(containerReads, signal) : [],
    ]);
    const runs = new Map<RemoteRead<ZunHandle>, RemoteRun<ZunHandle> | undefined>();
    capsuleReads.forEach((r, i) => runs.set(r, capsules[i] as RemoteRun<ZunHandle> | undefined));
    containerReads.forEach((r, i) => runs.set(r, containers[i]));
    return reads.map((r) => runs.get(r));
  }

  async make(
    pod: Pod,
    signal?: AbortSignal,
    options?: RemoteMakeOptions,
  ): Promise<void | RemoteRun<ZunHandle>> {
    if (kindOf(pod) === "container") return await this.containers.make(pod, signal, options);
    await this.capsules.make(pod, signal);
  }

  async remove(pod: Pod, signal?: AbortSignal, run?: RemoteRun<ZunHandle>): Promise<void> {
    if (kindOf(pod, run) === "container") return await this.containers.remove(pod, signal);
    await this.capsules.remove(pod, signal);
  }

  async discard(pod: Pod, run: RemoteRun<ZunHandle>, signal: AbortSignal): Promise<void> {
    if (kindOf(pod, run) === "container") return await this.containers.discard(pod, run, signal);
    await this.capsules.remove(pod, signal);
  }
}
