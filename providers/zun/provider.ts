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
  LegacyRemotePodsProvider as RemotePodsProvider,
  NotFoundError,
  NotSupportedError,
  type Provider,
  type ProviderDeps,
  type ProviderNodeFields,
  refuseStreaming,
  RemotePods,
} from "../../provider/mod.ts";
import { ZunCapsules } from "./capsules.ts";
import type { ZunConfig } from "./config.ts";
import type { ZunApi } from "./zun_api.ts";

/** Why a capsule's containers have neither logs nor exec. */
export const NO_STREAMS =
  "Zun keeps no logs and runs no exec for a capsule's containers (its /v1/containers/<uuid>/logs and /execute answer 404 for them)";

interface Host {
  cpus?: number;
  mem_total?: number;
}

/** Capacity from Zun: the hosts' sum (admins see them), else the project's quota limits. */
async function zunCapacity(
  api: ZunApi,
  signal?: AbortSignal,
): Promise<{ cpu?: number; memoryMiB?: number; pods?: number; from: string } | undefined> {
  try {
    const { body } = await api.call<{ hosts: Host[] }>("GET", "/hosts", { signal });
    if (body.hosts.length) {
      return {
        cpu: body.hosts.reduce((n, h) => n + (h.cpus ?? 0), 0),
        memoryMiB: body.hosts.reduce((n, h) => n + (h.mem_total ?? 0), 0),
        from: `${body.hosts.length} Zun host(s)`,
      };
    }
  } catch {
    // not an admin: the project's quotas next
  }
  const project = await api.projectId(signal);
  if (!project) return undefined;
  const { body } = await api.call<{ containers?: number; cpu?: number; memory?: number }>(
    "GET",
    `/quotas/${project}`,
    { signal },
  );
  const limit = (n?: number) => n !== undefined && n >= 0 ? n : undefined;
  return {
    cpu: limit(body.cpu),
    memoryMiB: limit(body.memory),
    pods: limit(body.containers),
    from: `project ${project}'s quotas`,
  };
}

/** The provider; see the module doc. */
export class ZunProvider extends RemotePodsProvider implements Provider {
  /** The core marks Secret-sourced env vars, for `secretEnv: refuse` (./capsule.ts). */
  readonly secretEnvRefs = true;
  protected readonly pods: RemotePods;
  readonly #api: ZunApi;
  readonly #config: ZunConfig;
  readonly #deps: ProviderDeps;
  readonly #stop = new AbortController();
  readonly #running: Promise<void>;
  #capacity: Awaited<ReturnType<typeof zunCapacity>>;

  constructor(config: ZunConfig, deps: ProviderDeps, api: ZunApi) {
    super();
    this.#config = config;
    this.#deps = deps;
    this.#api = api;
    if (config.exposePorts) {
      // Zun's rule is remote_ip_prefix 0.0.0.0/0 (zun/network/neutron.py `expose_ports`).
      deps.log.warn("exposePorts is on: Zun opens every pod's containerPorts to every address");
    }
    const backend = new ZunCapsules({
      api,
      nodeName: deps.nodeName,
      log: deps.log,
      exposePorts: config.exposePorts,
      secretEnv: config.secretEnv,
      deleteTimeoutMs: config.deleteTimeout,
      sleep: (ms, signal) => deps.clock.sleep(ms, signal),
      now: () => deps.clock.now(),
    });
    this.pods = new RemotePods({
      backend,
      clock: deps.clock,
      log: deps.log,
      intervalMs: config.statusInterval,
      hostIP: deps.internalIp,
    });
    this.#running = this.pods.run(AbortSignal.any([this.#stop.signal, deps.signal]));
  }

  /** One capsule list call within pingTimeout; the error names the endpoint and Zun's answer. */
  async ping(options: CallOptions): Promise<void> {
    const deadline = AbortSignal.timeout(this.#config.pingTimeout);
    const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
    await this.#api.call("GET", "/capsules/?limit=1", { signal });
    if (!this.#capacity) {
      this.#capacity = await zunCapacity(this.#api, signal).catch(() => undefined);
    }
  }

  configureNode(node: Node): void {
    const fallback = this.#config.capacity;
    const found = this.#capacity;
    const fields: ProviderNodeFields = {
      capacity: {
        cpu: found?.cpu !== undefined ? String(found.cpu) : fallback.cpu,
        memory: found?.memoryMiB !== undefined ? `${found.memoryMiB}Mi` : fallback.memory,
        pods: found?.pods !== undefined ? String(found.pods) : fallback.pods,
      },
    };
    applyProviderNode(node, fields, this.#deps);
  }

  getContainerLogs(
    ref: ContainerRef,
    _options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    return this.#known(ref).then(() => {
      throw new NotSupportedError(`logs are not available: ${NO_STREAMS}`);
    });
  }

  runInContainer(ref: ContainerRef, _options: ExecOptions): Promise<number> {
    return this.#known(ref).then(() => refuseStreaming("exec", NO_STREAMS));
  }

  async #known(ref: ContainerRef): Promise<void> {
    const pod = await this.pods.getPod(ref.namespace, ref.pod);
    if (!pod?.spec?.containers?.some((c) => c.name === ref.container)) {
      throw new NotFoundError(
        `container ${ref.container} of pod ${ref.namespace}/${ref.pod} is not on this node`,
      );
    }
  }

  /** Stops reading capsules; the capsules run on. */
  async close(): Promise<void> {
    this.#stop.abort();
    await this.#running;
  }
}
