/**
 * The zun provider: each pod is one Zun capsule (./capsule.ts), its life owned by the kit's
 * {@link RemotePods} over ./capsules.ts. The node's capacity comes from Zun's hosts (admin) or
 * the project's quotas, else the config; ping reads Zun's capsule list. A capsule's containers
 * have no logs and no exec in Zun 18.0.0 (`/v1/containers/<uuid>/logs` and `/execute` answer
 * 404 for them, and capsules have no actions), so those answer 501 saying so.
 * @module
 */
import type { Node } from "kubernetes-types/core/v1.d.ts";
import {
  applyProviderNode,
  type CallOptions,
  type ContainerLogOptions,
  type ContainerRef,
  type ExecOptions,
  NotSupportedError,
  type Provider,
  type ProviderDeps,
  refuseStreaming,
  RemotePodsProvider,
} from "../../provider/mod.ts";
import { ZunCapsules } from "./capsules.ts";
import type { ZunConfig } from "./config.ts";
import type { ZunApi } from "./zun_api.ts";
import { zunCapacity } from "./capacity.ts";

/** Why a capsule's containers have neither logs nor exec. */
export const NO_STREAMS =
  "Zun keeps no logs and runs no exec for a capsule's containers (its /v1/containers/<uuid>/logs and /execute answer 404 for them)";

/** The provider; see the module doc. */
export class ZunProvider extends RemotePodsProvider implements Provider {
  /** The core marks Secret-sourced env vars, for `secretEnv: refuse` (./capsule.ts). */
  readonly secretEnvRefs = true;
  readonly #api: ZunApi;
  readonly #config: ZunConfig;
  #capacity: Awaited<ReturnType<typeof zunCapacity>>;

  constructor(config: ZunConfig, deps: ProviderDeps, api: ZunApi) {
    if (config.exposePorts) {
      // Zun's rule is remote_ip_prefix 0.0.0.0/0 (zun/network/neutron.py `expose_ports`).
      deps.log.warn("exposePorts is on: Zun opens every pod's containerPorts to every address");
    }
    super(deps, () => ({
      backend: new ZunCapsules({
        ...deps,
        api,
        exposePorts: config.exposePorts,
        secretEnv: config.secretEnv,
        deleteTimeoutMs: config.deleteTimeout,
        sleep: (ms, signal) => deps.clock.sleep(ms, signal),
        now: () => deps.clock.now(),
      }),
      intervalMs: config.statusInterval,
      // Zun runs no hooks and answers no exec for a capsule's containers.
      hooks: "refuse",
      hooksRefused: NO_STREAMS,
    }));
    this.#config = config;
    this.#api = api;
  }

  /** One capsule list call within pingTimeout; the error names the endpoint and Zun's answer. */
  async ping(options: CallOptions): Promise<void> {
    const deadline = AbortSignal.timeout(this.#config.pingTimeout);
    const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
    await this.#api.call("GET", "/capsules/?limit=1", { signal });
    this.#capacity ??= await zunCapacity(this.#api, signal).catch(() => undefined);
  }

  configureNode(node: Node): void {
    const { cpu, memory, pods } = this.#config.capacity;
    const found = this.#capacity;
    applyProviderNode(node, {
      capacity: {
        cpu: found?.cpu !== undefined ? String(found.cpu) : cpu,
        memory: found?.memoryMiB !== undefined ? `${found.memoryMiB}Mi` : memory,
        pods: found?.pods !== undefined ? String(found.pods) : pods,
      },
    }, this.deps);
  }

  async getContainerLogs(
    ref: ContainerRef,
    _options?: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    await this.#known(ref);
    throw new NotSupportedError(`logs are not available: ${NO_STREAMS}`);
  }

  async runInContainer(ref: ContainerRef, _options?: ExecOptions): Promise<number> {
    return await this.#known(ref).then(() => refuseStreaming("exec", NO_STREAMS));
  }

  /** The pod once adopted (a capsule's containers have no init containers), or NotFoundError. */
  async #known(ref: ContainerRef): Promise<void> {
    await this.pods.getPod(ref.namespace, ref.pod);
    this.known(ref);
  }
}
