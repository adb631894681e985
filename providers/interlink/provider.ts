/**
 * The interlink provider: each pod bound to the virtual node becomes one job of an interLink
 * plugin (SLURM, HTCondor, Docker, apptainer...), through interLink's API server
 * (`target: interlink`) or the plugin itself (`target: plugin`). The kit's RemotePods owns the
 * pod's life — adoption, one `/status` call a period for all pods (backing off while it fails),
 * restarts by the pod's policy after the kubelet's back-off, status pushes — on the interLink
 * backend in `./backend.ts`; this file adds the node (Ready while the ping answers) and logs.
 * Exec, attach and port-forward have no interLink API.
 * @module
 */
import type { Node, Pod } from "kubernetes-types/core/v1.d.ts";
import {
  applyProviderNode,
  backendUnreachable,
  type CallOptions,
  type ContainerLogOptions,
  type ContainerRef,
  LegacyRemotePodsProvider as RemotePodsProvider,
  NotFoundError,
  podEventSink,
  type PodRef,
  type Provider,
  type ProviderDeps,
  refuseStreaming,
  RemotePods,
} from "../../provider/mod.ts";
import { InterlinkApi } from "./api.ts";
import { InterlinkBackend } from "./backend.ts";
import { InterlinkClient } from "./client.ts";
import type { InterlinkConfig } from "./config.ts";
import { readLog } from "./logs.ts";
import { nodeFieldsOf } from "./node.ts";
import type { Job } from "./status.ts";
import type { PingResponse } from "./wire.ts";

/** Runs the virtual node's pods as interLink jobs; see the module doc. */
export class InterlinkProvider extends RemotePodsProvider<Job> implements Provider {
  readonly #config: InterlinkConfig;
  readonly #deps: ProviderDeps;
  readonly #client: InterlinkClient;
  readonly #api: InterlinkApi;
  protected readonly pods: RemotePods<Job>;
  readonly #nodeCallbacks = new Set<() => void>();
  readonly #stop = new AbortController();
  readonly #running: Promise<void>;
  #ping?: PingResponse;

  constructor(config: InterlinkConfig, deps: ProviderDeps) {
    super();
    this.#config = config;
    this.#deps = deps;
    this.#client = new InterlinkClient(config, { log: deps.log, nodeName: deps.nodeName });
    this.#api = new InterlinkApi(this.#client, config);
    this.pods = new RemotePods({
      backend: new InterlinkBackend({
        api: this.#api,
        config,
        kube: deps.kube,
        nodeName: deps.nodeName,
        clock: deps.clock,
        log: deps.log,
        event: podEventSink(deps, "vkubelet-interlink"),
        hostIP: deps.internalIp,
      }),
      clock: deps.clock,
      log: deps.log,
      intervalMs: config.statusInterval,
      hostIP: deps.internalIp,
      keepPodIP: true,
      // Pacing as interLink's virtual kubelet statusLoop (pkg/virtualkubelet/virtualkubelet.go,
      // interlink-hq/interLink f632175701d78b604138ce2e1e38af13d1f7546b), one call for all pods.
      pollBackoff: true,
    });
    this.#running = this.pods.run(AbortSignal.any([deps.signal, this.#stop.signal]));
  }

  configureNode(node: Node): void {
    applyProviderNode(node, nodeFieldsOf(this.#config, this.#ping), this.#deps);
  }

  notifyNodeChanged(callback: () => void): void {
    this.#nodeCallbacks.add(callback);
  }

  async ping(options: CallOptions): Promise<void> {
    // The client's messages name the endpoint and the fix, redacted already.
    const answer = await this.#api.ping(options.signal).catch((err) => {
      throw backendUnreachable(this.#client.endpoint, err, { reason: "InterlinkUnreachable" });
    });
    const before = JSON.stringify(nodeFieldsOf(this.#config, this.#ping));
    this.#ping = answer;
    if (JSON.stringify(nodeFieldsOf(this.#config, answer)) !== before) {
      for (const callback of this.#nodeCallbacks) callback();
    }
  }

  async getContainerLogs(
    ref: ContainerRef,
    options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    const pod = this.#known(ref.namespace, ref.pod, ref.container);
    return await readLog({
      api: this.#api,
      namespace: ref.namespace,
      pod: ref.pod,
      uid: pod.metadata?.uid ?? "",
      container: ref.container,
      now: () => this.#deps.clock.now(),
      sleep: (ms, signal) => this.#deps.clock.sleep(ms, signal),
      pollMs: 1000,
      interlink: this.#config.target === "interlink",
      maxBytes: this.#config.maxResponseBytes,
    }, options);
  }

  runInContainer(ref: ContainerRef): Promise<number> {
    return refuseStreaming(
      "exec",
      "interLink's API has no exec call",
      () => this.#known(ref.namespace, ref.pod, ref.container),
    );
  }

  attachToContainer(ref: ContainerRef): Promise<void> {
    return refuseStreaming(
      "attach",
      "interLink's API has no attach call",
      () => this.#known(ref.namespace, ref.pod, ref.container),
    );
  }

  portForward(ref: PodRef): Promise<void> {
    return refuseStreaming(
      "portForward",
      "interLink's API has no port-forward call",
      () => this.#known(ref.namespace, ref.name),
    );
  }

  async close(): Promise<void> {
    this.#stop.abort();
    await this.#running;
    this.#client.close();
  }

  /** The pod (with the container, init containers included) on this node, or NotFoundError. */
  #known(namespace: string, name: string, container?: string): Pod {
    const pod = this.pods.knownPod(namespace, name);
    const spec = pod.spec;
    const names = [...spec?.containers ?? [], ...spec?.initContainers ?? []].map((c) => c.name);
    if (container !== undefined && !names.includes(container)) {
      throw new NotFoundError(`pod ${namespace}/${name} has no container ${container}`);
    }
    return pod;
  }
}
