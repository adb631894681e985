/**
 * Keystone v3 for the zun provider: a scoped token from a password or an application credential
 * (POST /v3/auth/tokens, the identity API v3 reference "Password authentication with scoped
 * authorization" and "Authenticating with an Application Credential"), renewed a minute before
 * it expires or when Zun answers 401, and the container service's endpoint from the token's
 * catalog.
 * @module
 */
import { credentialUrlProblem, InvalidInputError, TransientError } from "../../../provider/mod.ts";
import { checkAuthUrl, type Credentials } from "../credentials.ts";

/** A token and the endpoint it was issued with. */
export interface Session {
  token: string;
  /** When it expires, epoch ms. */
  expiresAtMs: number;
  /** The container service's endpoint (e.g. `https://zun.example:9517/v1`). */
  endpoint: string;
  /** The project the token is scoped to. */
  projectId?: string;
  /** The user the token was given to (an application credential's too): Zun records it as
   * each object's `user_id`, which the provider checks before it takes an object as its own. */
  userId?: string;
}

interface CatalogEntry {
  type: string;
  endpoints: { interface: string; region?: string; region_id?: string; url: string }[];
}

/** The keystone v3 base (`…/v3`) of an auth URL given with or without the version. */
export function identityBase(authUrl: string): string {
  const url = authUrl.replace(/\/+$/, "");
  return /\/v3$/.test(url) ? url : `${url}/v3`;
}

function domain(name?: string, id?: string) {
  return id ? { id } : { name: name ?? "Default" };
}

/** The body of the token request for `credentials`. */
export function tokenRequestBody(c: Credentials): unknown {
  const user = c.userId
    ? { id: c.userId }
    : c.username
    ? { name: c.username, domain: domain(c.userDomainName, c.userDomainId) }
    : undefined;
  if (c.authType === "v3applicationcredential") {
    const credential = c.applicationCredentialId
      ? { id: c.applicationCredentialId, secret: c.applicationCredentialSecret }
      : { name: c.applicationCredentialName, secret: c.applicationCredentialSecret, user };
    // An application credential is scoped already: no scope may be sent.
    return {
      auth: {
        identity: { methods: ["application_credential"], application_credential: credential },
      },
    };
  }
  const project = c.projectId
    ? { id: c.projectId }
    : { name: c.projectName, domain: domain(c.projectDomainName, c.projectDomainId) };
  return {
    auth: {
      identity: { methods: ["password"], password: { user: { ...user, password: c.password } } },
      scope: { project },
    },
  };
}

/** Picks the service's endpoint by type, interface and (when given) region. */
export function endpointOf(
  catalog: CatalogEntry[],
  serviceType: string,
  c: Pick<Credentials, "interface" | "regionName">,
): string {
  const service = catalog.find((s) => s.type === serviceType);
  const endpoint = service?.endpoints.find((e) =>
    e.interface === c.interface &&
    (!c.regionName || e.region_id === c.regionName || e.region === c.regionName)
  );
  if (!endpoint) {
    const where = `${c.interface} endpoint${c.regionName ? ` in region ${c.regionName}` : ""}`;
    throw new InvalidInputError(
      service
        ? `keystone's catalog has no ${where} for the ${serviceType} service (Zun): set OS_REGION_NAME or OS_INTERFACE to one it has (${
          service.endpoints.map((e) => `${e.interface}/${e.region_id ?? e.region}`).join(", ")
        })`
        : `keystone's catalog has no ${serviceType} service (Zun) for this project: is Zun installed in this cloud, or is it registered under another type (set serviceType in the provider config)?`,
    );
  }
  // Every call to Zun carries the token, a bearer credential: refused in clear as keystone's URL.
  const problem = credentialUrlProblem(endpoint.url);
  if (problem) {
    throw new InvalidInputError(
      `keystone's catalog gives the ${serviceType} service (Zun) at ${endpoint.url}, which is ${problem}: the token would travel in clear; register Zun's https:// endpoint, or pick another with OS_INTERFACE or OS_REGION_NAME`,
    );
  }
  return endpoint.url.replace(/\/+$/, "");
}

/** Asks keystone for a token; errors name the URL and what keystone said. */
export async function authenticate(
  c: Credentials,
  serviceType: string,
  signal?: AbortSignal,
): Promise<Session> {
  checkAuthUrl(c); // also for credentials not made by loadCredentials
  const url = `${identityBase(c.authUrl)}/auth/tokens`;
  let response: Response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(tokenRequestBody(c)),
      signal,
    });
  } catch (err) {
    if (signal?.aborted) throw err;
    throw new TransientError(`cannot reach keystone at ${url}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const text = await response.text();
  if (response.status === 401) {
    throw new InvalidInputError(
      `keystone at ${url} refused the credentials from ${c.source} (401): ${text.slice(0, 300)}`,
    );
  }
  if (!response.ok) {
    throw new TransientError(
      `keystone at ${url} answered ${response.status}: ${text.slice(0, 300)}`,
    );
  }
  const token = response.headers.get("X-Subject-Token");
  const body = JSON.parse(text) as {
    token: {
      expires_at: string;
      catalog?: CatalogEntry[];
      project?: { id: string };
      user?: { id: string };
    };
  };
  if (!token) throw new TransientError(`keystone at ${url} sent no X-Subject-Token`);
  return {
    token,
    expiresAtMs: Date.parse(body.token.expires_at),
    endpoint: endpointOf(body.token.catalog ?? [], serviceType, c),
    projectId: body.token.project?.id,
    userId: body.token.user?.id,
  };
}
