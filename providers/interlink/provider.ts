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
  type Provider,
  type ProviderDeps,
  RemotePodsProvider,
} from "../../provider/mod.ts";
import { type InterlinkBackend, interlinkJobsSetup } from "./backend.ts";
import { InterlinkApi } from "./client/api.ts";
import { InterlinkClient } from "./client/http_client.ts";
import type { InterlinkConfig } from "./config.ts";
import { InterlinkNode } from "./node.ts";
import type { Job } from "./status.ts";
import { logReading, readLog } from "./streams/logs.ts";

/** Runs the virtual node's pods as interLink jobs; see the module doc. */
export class InterlinkProvider extends RemotePodsProvider<Job, InterlinkBackend>
  implements Provider {
  readonly #api: InterlinkApi;
  readonly #endpoint: string;
  readonly #node: InterlinkNode;
  readonly #logs: ReturnType<typeof logReading>;

  constructor(config: InterlinkConfig, deps: ProviderDeps) {
    const client = new InterlinkClient(config, { log: deps.log, nodeName: deps.nodeName });
    const api = new InterlinkApi(client, config);
    super(deps, () => interlinkJobsSetup(config, { ...deps, api, client }));
    this.#api = api;
    this.#endpoint = client.endpoint;
    this.#node = new InterlinkNode(config);
    this.#logs = logReading(api, { config, clock: deps.clock });
  }

  configureNode(node: Node): void {
    applyProviderNode(node, this.#node.fields(), this.deps);
  }

  notifyNodeChanged(callback: () => void): void {
    this.#node.onChange(callback);
  }

  async ping(options: CallOptions): Promise<void> {
    // The client's messages name the endpoint and the fix, redacted already.
    const help = { reason: "InterlinkUnreachable" };
    this.#node.pinged(await this.reach((s) => this.#api.ping(s), options, this.#endpoint, help));
  }

  getContainerLogs(ref: ContainerRef, options: ContainerLogOptions): Promise<ReadableStream> {
    const uid = this.known(ref).metadata?.uid ?? "";
    return readLog({ ...ref, ...this.#logs, uid }, options);
  }

  readonly runInContainer = this.refusing("exec", "interLink's API has no exec call");
  readonly attachToContainer = this.refusing("attach", "interLink's API has no attach call");
  readonly portForward = this.refusing("portForward", "interLink's API has no port-forward call");
}
