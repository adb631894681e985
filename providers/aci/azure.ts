/**
 * The ACI client: Microsoft's SDK (`@azure/arm-containerinstance`, api-version 2023-05-01) with
 * `@azure/identity`'s default credential chain (environment, workload identity, managed identity,
 * Azure CLI), and its retry policies, which back off on 429 (honouring Retry-After), 5xx and
 * network errors before an error reaches the provider. What still fails is sorted here into the
 * provider errors the core understands.
 *
 * A plain-http endpoint (loopback only, which the config enforces) gets a fixed test token
 * instead of the credential chain: no real Azure token is ever sent without TLS, and the SDK's
 * bearer policy refuses plain http anyway.
 * @module
 */
import {
  type ContainerGroup,
  ContainerInstanceManagementClient,
} from "@azure/arm-containerinstance";
import { DefaultAzureCredential } from "@azure/identity";
import { InvalidInputError, NotFoundError, TransientError } from "../../provider/mod.ts";
import type { AciConfig } from "./config.ts";
import { fetchHttpClient } from "./client/fetch_client.ts";
import { type ArmReadBudget, armReadLimitPolicy } from "./client/read_budget.ts";

export type { ContainerGroup };

/** The token sent to a plain-http (loopback, test) endpoint. */
export const LOOPBACK_TOKEN = "vkubelet-loopback-test-token";

/** Builds the SDK client for `config`; its reads go through `budget` when given. */
export function createAciClient(
  config: AciConfig,
  budget?: ArmReadBudget,
): ContainerInstanceManagementClient {
  const insecure = config.endpoint.startsWith("http:");
  const staticToken = {
    getToken: () => Promise.resolve({ token: LOOPBACK_TOKEN, expiresOnTimestamp: 8.64e15 }),
  };
  // One fetch transport for the API and for token requests (managed identity, workload identity).
  const httpClient = fetchHttpClient();
  const client = new ContainerInstanceManagementClient(
    insecure ? staticToken : new DefaultAzureCredential({ httpClient }),
    config.subscriptionId,
    {
      httpClient,
      endpoint: config.endpoint,
      allowInsecureConnection: insecure,
      retryOptions: { maxRetries: 5, retryDelayInMs: 500, maxRetryDelayInMs: 10_000 },
      userAgentOptions: { userAgentPrefix: "vkubelet" },
    },
  );
  if (budget) client.pipeline.addPolicy(armReadLimitPolicy(budget), { afterPhase: "Retry" });
  if (insecure) {
    client.pipeline.removePolicy({ name: "bearerTokenAuthenticationPolicy" });
    client.pipeline.addPolicy({
      name: "vkubeletLoopbackToken",
      sendRequest: (request, next) => {
        request.headers.set("Authorization", `Bearer ${LOOPBACK_TOKEN}`);
        return next(request);
      },
    });
  }
  return client;
}

/** The HTTP status of an SDK error (`RestError`), if it has one. */
export function statusOf(err: unknown): number | undefined {
  const status = (err as { statusCode?: unknown })?.statusCode;
  return typeof status === "number" ? status : undefined;
}

/** The ARM error code (`error.code` of the body), if the SDK error has one. */
function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown })?.code;
  return typeof code === "string" ? code : undefined;
}

/**
 * An SDK error as a provider error: a 404 becomes {@link NotFoundError}; a request ARM refuses as
 * invalid (400, 409 conflicts excepted) becomes {@link InvalidInputError}, so the pod fails with
 * Azure's message; everything else — throttling past the SDK's retries, 5xx, network, missing
 * role assignments an operator can fix — becomes {@link TransientError}, retried by the core.
 */
export function aciError(what: string, err: unknown): Error {
  if (err instanceof NotFoundError || err instanceof InvalidInputError) return err;
  const status = statusOf(err);
  const code = codeOf(err);
  const text = err instanceof Error ? err.message : String(err);
  const message = `${what}: ${status ?? "no answer"}${code ? ` ${code}` : ""}: ${text}`;
  if (status === 404) return new NotFoundError(message, { cause: err });
  if (status === 400 || status === 422) return new InvalidInputError(message, { cause: err });
  return new TransientError(message, { cause: err, retryAfterMs: 2000 });
}
