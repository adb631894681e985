/**
 * The calls of the two targets. `target: interlink` speaks to interLink's API server as its
 * virtual kubelet does: POST /create, DELETE /delete, GET /status, GET /getLogs, POST /pinglink
 * (interlink-hq/interLink, commit f632175701d78b604138ce2e1e38af13d1f7546b,
 * pkg/virtualkubelet/execute.go `createRequest`, `deleteRequest`, `statusRequest`,
 * `LogRetrieval`, `PingInterLink`). `target: plugin` speaks to a plugin as the API server
 * forwards to it: POST /create with `RetrievedPodData`, POST /delete, GET /status, GET /getLogs,
 * and a ping that is GET /status of no pods (pkg/interlink/api/create.go, delete.go, status.go,
 * logs.go, ping.go).
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { InterlinkConfig } from "../config.ts";
import type { InterlinkClient } from "./http_client.ts";
import {
  CreateRefusedError,
  createRequestFor,
  type InterlinkPodStatus,
  jobIdOf,
  type LogStruct,
  parseStatuses,
  type PingResponse,
  type PodObjects,
  retrievedPodDataFor,
} from "./wire.ts";
import { podKeyOf, TransientError } from "../../../provider/mod.ts";

/** The pod as `/status` and `/delete` carry it: no managed fields, to keep bodies small. */
export function slimPod(pod: Pod): Pod {
  const { managedFields: _, ...metadata } = pod.metadata ?? {};
  return { apiVersion: "v1", kind: "Pod", ...pod, metadata };
}

/** The target's calls over one client. */
export class InterlinkApi {
  readonly #client: InterlinkClient;
  readonly #config: InterlinkConfig;

  constructor(client: InterlinkClient, config: InterlinkConfig) {
    this.#client = client;
    this.#config = config;
  }

  /** Submits the pod; its job ID (`""` if the answer names none). */
  async create(pod: Pod, objects: PodObjects, signal?: AbortSignal): Promise<string> {
    const body = this.#config.target === "interlink"
      ? createRequestFor(pod, objects, this.#config.jobScriptBuilderURL)
      : retrievedPodDataFor(pod, objects);
    const what = `create of pod ${podKeyOf(pod)}`;
    const text = await this.#client.call({ method: "POST", path: "/create", body, what }, {
      signal,
    });
    try {
      return jobIdOf(text, pod.metadata?.uid ?? "");
    } catch (err) {
      if (!(err instanceof CreateRefusedError)) throw malformed(this.#client, what, text, err);
      throw new CreateRefusedError(
        this.#client.redact(`${this.#client.endpoint} answered ${what}: ${err.message}`),
      );
    }
  }

  /** Removes the pod's job. */
  async delete(pod: Pod, signal?: AbortSignal): Promise<void> {
    const method = this.#config.target === "interlink" ? "DELETE" : "POST";
    await this.#client.call(
      { method, path: "/delete", body: slimPod(pod), what: `delete of pod ${podKeyOf(pod)}` },
      { signal },
    );
  }

  /** The plugin's statuses of `pods` (all it has when `pods` is empty, if it lists). */
  async status(pods: Pod[], signal?: AbortSignal): Promise<InterlinkPodStatus[]> {
    const what = `status of ${pods.length} pod(s)`;
    const text = await this.#client.call(
      { method: "GET", path: "/status", body: pods.map(slimPod), what },
      { signal },
    );
    try {
      return parseStatuses(text);
    } catch (err) {
      throw malformed(this.#client, what, text, err);
    }
  }

  /**
   * Reads a container's log, whole: the deadline covers the body, so a plugin that stalls
   * mid-log fails the read instead of holding `kubectl logs` open.
   */
  logs(request: LogStruct, signal?: AbortSignal): Promise<string> {
    const what = `logs of ${request.Namespace}/${request.PodName}/${request.ContainerName}`;
    return this.#client.call({ method: "GET", path: "/getLogs", body: request, what }, {
      signal,
    });
  }

  /** Pings; the answer as a `PingResponse` when it is one. */
  async ping(signal?: AbortSignal): Promise<PingResponse | undefined> {
    const options = { signal, timeoutMs: this.#config.pingTimeout, timeoutKey: "pingTimeout" };
    const text = this.#config.target === "interlink"
      ? await this.#client.call({ method: "POST", path: "/pinglink", what: "ping" }, options)
      : await this.#client.call(
        { method: "GET", path: "/status", body: [], what: "ping" },
        options,
      );
    try {
      const parsed: unknown = JSON.parse(text);
      return parsed && typeof parsed === "object" && !Array.isArray(parsed)
        ? parsed as PingResponse
        : undefined;
    } catch {
      return undefined; // plain text answers are fine (interLink's own answer is such)
    }
  }
}

function malformed(
  client: InterlinkClient,
  what: string,
  text: string,
  err: unknown,
): TransientError {
  // JSON.parse quotes the text it stops at: the whole message goes through redact.
  return new TransientError(
    client.redact(
      `${client.endpoint} answered ${what} with malformed JSON (${(err as Error).message}): ${
        text.slice(0, 200)
      }; check the plugin's answer against the interLink types`,
    ),
    { cause: new SyntaxError(client.redact((err as Error).message)) },
  );
}
