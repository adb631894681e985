/**
 * The one primitive every typed helper, watch and informer is built on. Controllers and tests
 * can implement {@link KubeRequester} with a fake instead of a real client.
 * @module
 */

/** Query parameters; `undefined` values are left out. */
export type Query = Record<string, string | number | boolean | undefined>;

/** One HTTP request to the apiserver. */
export interface RequestOptions {
  /** Defaults to `GET`. */
  method?: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** Absolute API path, e.g. `/api/v1/namespaces/default/pods`. */
  path: string;
  query?: Query;
  /** Sent as JSON unless it is already a string. */
  body?: unknown;
  /** Defaults to `application/json` when there is a body. */
  contentType?: string;
  signal?: AbortSignal;
}

/** Sends requests to the apiserver; the real one is `KubeClient`. */
export interface KubeRequester {
  /** Sends a request and parses the JSON answer; non-2xx answers throw `KubeApiError`. */
  request<T>(options: RequestOptions & { stream?: false }): Promise<T>;
  /** Sends a request and hands back the answer's body as bytes, for watches and logs. */
  request(options: RequestOptions & { stream: true }): Promise<ReadableStream<Uint8Array>>;
}
