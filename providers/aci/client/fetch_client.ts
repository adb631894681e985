/**
 * The Azure SDK's transport on Deno's `fetch` instead of `node:http` (the SDK takes any
 * `HttpClient`; its policies — retries, Retry-After, redirects, auth — run as before).
 *
 * Why: under Deno, a `node:http` request the SDK aborts can leave its socket behind, and when the
 * server later resets that connection the socket's ECONNRESET reaches no listener and ends the
 * process. It happened in the conformance suite (an aborted `capabilities` read, then Prism
 * stopped); in production an aborted call and an Azure load balancer's idle reset would do the
 * same. `fetch` keeps no such socket: an abort ends the request and its connection.
 * @module
 */
import {
  createHttpHeaders,
  type HttpClient,
  type PipelineRequest,
  type PipelineResponse,
  RestError,
} from "@azure/core-rest-pipeline";

/** An `HttpClient` for the SDK on `fetch`; see the module doc. */
export function fetchHttpClient(): HttpClient {
  return { sendRequest };
}

async function sendRequest(request: PipelineRequest): Promise<PipelineResponse> {
  const outer = request.abortSignal;
  if (outer?.aborted) throw abortError();
  const controller = new AbortController();
  const onAbort = () => controller.abort();
  outer?.addEventListener("abort", onAbort);
  let timedOut = false;
  const timer = request.timeout > 0
    ? setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, request.timeout)
    : undefined;
  try {
    const response = await fetch(request.url, {
      method: request.method,
      headers: request.headers.toJSON({ preserveCase: true }),
      body: bodyOf(request),
      signal: controller.signal,
      // The SDK's redirect policy follows redirects, as with node:http.
      redirect: "manual",
    });
    const headers = createHttpHeaders();
    for (const [name, value] of response.headers) headers.set(name, value);
    const status = response.status;
    const streamed = request.streamResponseStatusCodes;
    if (streamed?.has(status) || streamed?.has(Number.POSITIVE_INFINITY)) {
      return { request, status, headers, browserStreamBody: response.body ?? undefined };
    }
    return { request, status, headers, bodyAsText: await response.text() };
  } catch (err) {
    if (outer?.aborted) throw abortError();
    const message = timedOut
      ? `no answer from ${new URL(request.url).host} within ${request.timeout} ms`
      : String((err as Error)?.message ?? err);
    // REQUEST_SEND_ERROR: the SDK's retry policy retries it, as a node:http socket error.
    throw new RestError(message, { code: RestError.REQUEST_SEND_ERROR, request });
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener("abort", onAbort);
  }
}

/** What `fetch` can send of the SDK's request bodies; the ACI SDK sends JSON text. */
function bodyOf(request: PipelineRequest): BodyInit | undefined {
  const body = request.body;
  if (request.multipartBody || request.formData) {
    throw new RestError("multipart and form bodies are not supported by vkubelet's transport", {
      code: RestError.REQUEST_SEND_ERROR,
      request,
    });
  }
  if (body === undefined || body === null) return undefined;
  if (typeof body === "string" || body instanceof Blob || body instanceof ArrayBuffer) return body;
  if (ArrayBuffer.isView(body)) return body as Uint8Array<ArrayBuffer>;
  if (body instanceof ReadableStream) return body;
  throw new RestError(`a ${typeof body} request body is not supported by vkubelet's transport`, {
    code: RestError.REQUEST_SEND_ERROR,
    request,
  });
}

/** The error the SDK's policies take for "the caller aborted" (not retried). */
function abortError(): Error {
  const err = new Error("The operation was aborted.");
  err.name = "AbortError";
  return err;
}
