/**
 * The zun provider: a pod with one container runs as a plain Zun container, any other as a
 * capsule (./backend.ts), its life owned by the kit's RemotePods. Logs, exec and stats are
 * Zun's for plain containers (./streams/, ./stats.ts); a capsule's containers have none in Zun
 * 18.0.0 (`/v1/containers/<uuid>/logs`, `/execute` and `/stats` answer 404 for them), so those
 * answer 501 saying so. The node's capacity comes from Zun's hosts or quotas (./client/capacity.ts).
 * @module
 */
import type { Node } from "kubernetes-types/core/v1.d.ts";
import * as kit from "../../provider/mod.ts";
import { ZunBackend } from "./backend.ts";
import { nodeCapacity, zunCapacity } from "./client/capacity.ts";
import type { ZunConfig } from "./config.ts";
import { ZunStats } from "./stats.ts";
import type { ZunHandle } from "./status.ts";
import { NO_STREAMS, ZunStreams } from "./streams/mod.ts";
import type { ZunApi } from "./client/zun_api.ts";

/** The provider; see the module doc. */
export class ZunProvider extends kit.RemotePodsProvider<ZunHandle, ZunBackend>
  implements kit.Provider {
  /** The core marks Secret-sourced env vars, for `secretEnv: refuse` (./request/capsule.ts). */
  readonly secretEnvRefs = true;
  readonly #stats: ZunStats;
  readonly #streams: ZunStreams;
  #capacity: Awaited<ReturnType<typeof zunCapacity>>;

  constructor(readonly config: ZunConfig, deps: kit.ProviderDeps, readonly api: ZunApi) {
    // Zun's rule is remote_ip_prefix 0.0.0.0/0 (zun/network/neutron.py `expose_ports`).
    if (config.exposePorts) deps.log.warn("exposePorts is on: Zun opens every pod's ports to all");
    super(deps, () => ({
      backend: ZunBackend.of(config, deps, api),
      intervalMs: config.statusInterval,
      hooks: "refuse", // Zun runs none; its exec is a capsule's never, a container's for 5 s
      hooksRefused: NO_STREAMS,
    }));
    this.#stats = new ZunStats(api, deps);
    this.#streams = new ZunStreams(api, deps.clock);
  }

  /** One capsule list call within pingTimeout; the error names the endpoint and Zun's answer. */
  async ping(options: kit.CallOptions): Promise<void> {
    const deadline = AbortSignal.timeout(this.config.pingTimeout);
    const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
    await this.api.call("GET", "/capsules/?limit=1", { signal });
    this.#capacity ??= await zunCapacity(this.api, signal).catch(() => undefined);
  }

  configureNode(node: Node): void {
    const capacity = nodeCapacity(this.#capacity, this.config.capacity);
    kit.applyProviderNode(node, { capacity }, this.deps);
  }

  getContainerLogs(ref: kit.ContainerRef, options: kit.ContainerLogOptions) {
    const signal = this.callSignal(options.signal);
    return this.#streams.logs(ref, this.#runs(ref), { ...options, signal });
  }

  runInContainer(ref: kit.ContainerRef, options: kit.ExecOptions): Promise<number> {
    return this.#streams.exec(ref, this.#runs(ref), options);
  }

  /** The runs of `ref`'s pod, once it and its container are known on this node. */
  #runs = (ref: kit.ContainerRef) => () => {
    this.known(ref);
    return this.pods.logRunsOf(ref.namespace, ref.pod);
  };

  getStatsSummary(options: kit.CallOptions): Promise<kit.StatsSummary> {
    return this.#stats.summary(this.pods.running(), options.signal);
  }

  async getMetricsResource(options: kit.CallOptions): Promise<string> {
    return kit.metricsText(await this.getStatsSummary(options));
  }
}
