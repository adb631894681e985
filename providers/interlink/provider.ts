/**
 * The interlink provider: each pod bound to the virtual node becomes one job of an interLink
 * plugin (SLURM, HTCondor, Docker, apptainer...), through interLink's API server
 * (`target: interlink`) or the plugin itself (`target: plugin`), on the interLink backend in
 * `./backend.ts` under the kit's RemotePodsProvider. This file adds the node (Ready while the
 * ping answers) and logs; exec, attach and port-forward have no interLink API.
 * @module
 */
import type { Node } from "kubernetes-types/core/v1.d.ts";
import {
  applyProviderNode,
  type CallOptions,
  type ContainerLogOptions,
  type ContainerRef,
  podEventSink,
  type Provider,
  type ProviderDeps,
  RemotePodsProvider,
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
  readonly #client: InterlinkClient;
  readonly #api: InterlinkApi;
  readonly #nodeCallbacks = new Set<() => void>();
  #ping?: PingResponse;

  constructor(config: InterlinkConfig, deps: ProviderDeps) {
    const client = new InterlinkClient(config, { log: deps.log, nodeName: deps.nodeName });
    const api = new InterlinkApi(client, config);
    super(deps, () => ({
      backend: new InterlinkBackend({
        ...deps,
        api,
        config,
        event: podEventSink(deps, "vkubelet-interlink"),
        hostIP: deps.internalIp,
      }),
      intervalMs: config.statusInterval,
      // The plugin gets the pod with its `lifecycle` and runs the hooks in the job (the SLURM
      // plugin: interlink-hq/interlink-slurm-plugin f8451d93, pkg/slurm/Create.go, hooks.go).
      hooks: "backend",
      keepPodIP: true,
      // Pacing as interLink's virtual kubelet statusLoop (pkg/virtualkubelet/virtualkubelet.go,
      // interlink-hq/interLink f632175701d78b604138ce2e1e38af13d1f7546b), one call for all pods.
      pollBackoff: true,
    }));
    this.#config = config;
    this.#client = client;
    this.#api = api;
  }

  configureNode(node: Node): void {
    applyProviderNode(node, nodeFieldsOf(this.#config, this.#ping), this.deps);
  }

  notifyNodeChanged(callback: () => void): void {
    this.#nodeCallbacks.add(callback);
  }

  async ping(options: CallOptions): Promise<void> {
    // The client's messages name the endpoint and the fix, redacted already.
    const answer = await this.reach((s) => this.#api.ping(s), options, this.#client.endpoint, {
      reason: "InterlinkUnreachable",
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
    const { clock } = this.deps;
    return await readLog({
      ...ref,
      api: this.#api,
      uid: this.known(ref).metadata?.uid ?? "",
      now: () => clock.now(),
      sleep: (ms, signal) => clock.sleep(ms, signal),
      pollMs: 1000,
      interlink: this.#config.target === "interlink",
      maxBytes: this.#config.maxResponseBytes,
    }, options);
  }

  readonly runInContainer = this.refusing("exec", "interLink's API has no exec call");
  readonly attachToContainer = this.refusing("attach", "interLink's API has no attach call");
  readonly portForward = this.refusing("portForward", "interLink's API has no port-forward call");

  override async close(): Promise<void> {
    await super.close();
    this.#client.close();
  }
}
