/**
 * Where the zun provider's OpenStack credentials come from, as OpenStack's own tools read them:
 * the cloud named by `OS_CLOUD` (or the provider config's `cloud`) in `clouds.yaml`, searched in
 * `OS_CLIENT_CONFIG_FILE`, `./clouds.yaml`, `~/.config/openstack/clouds.yaml` and
 * `/etc/openstack/clouds.yaml` (openstacksdk `openstack/config/loader.py`, first file that has
 * the cloud), with `secure.yaml` beside it merged in; then the `OS_*` variables, each of which
 * overrides the same field (as python-openstackclient's options do). Password and application
 * credential auth (keystone v3) are supported.
 * @module
 */
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { credentialUrlProblem, InvalidInputError } from "../../provider/mod.ts";

/** Keystone v3 credentials and where to look in the catalog. */
export interface Credentials {
  /** Keystone's URL, as given (with or without `/v3`). */
  authUrl: string;
  /** `password` or `v3applicationcredential`. */
  authType: "password" | "v3applicationcredential";
  username?: string;
  userId?: string;
  password?: string;
  userDomainName?: string;
  userDomainId?: string;
  projectName?: string;
  projectId?: string;
  projectDomainName?: string;
  projectDomainId?: string;
  applicationCredentialId?: string;
  applicationCredentialName?: string;
  applicationCredentialSecret?: string;
  /** The catalog's region (`OS_REGION_NAME`); the first endpoint of the interface without it. */
  regionName?: string;
  /** The catalog's interface: public (default), internal or admin. */
  interface: string;
  /** Where they came from, for error messages. */
  source: string;
}

/** The `clouds.yaml` `auth` keys and the `OS_*` variables, by field. */
const FIELDS: [keyof Credentials, string, string][] = [
  ["authUrl", "auth_url", "OS_AUTH_URL"],
  ["username", "username", "OS_USERNAME"],
  ["userId", "user_id", "OS_USER_ID"],
  ["password", "password", "OS_PASSWORD"],
  ["userDomainName", "user_domain_name", "OS_USER_DOMAIN_NAME"],
  ["userDomainId", "user_domain_id", "OS_USER_DOMAIN_ID"],
  ["projectName", "project_name", "OS_PROJECT_NAME"],
  ["projectId", "project_id", "OS_PROJECT_ID"],
  ["projectDomainName", "project_domain_name", "OS_PROJECT_DOMAIN_NAME"],
  ["projectDomainId", "project_domain_id", "OS_PROJECT_DOMAIN_ID"],
  ["applicationCredentialId", "application_credential_id", "OS_APPLICATION_CREDENTIAL_ID"],
  ["applicationCredentialName", "application_credential_name", "OS_APPLICATION_CREDENTIAL_NAME"],
  [
    "applicationCredentialSecret",
    "application_credential_secret",
    "OS_APPLICATION_CREDENTIAL_SECRET",
  ],
];

/** What {@link loadCredentials} reads; the process's by default. */
export interface CredentialSources {
  env: (name: string) => string | undefined;
  /** A file's text, or undefined when it does not exist. */
  readFile: (path: string) => string | undefined;
  cwd: string;
  home?: string;
}

/** The process's environment and files. */
export function processSources(): CredentialSources {
  return {
    env: (name) => Deno.env.get(name),
    readFile: (path) => {
      try {
        return Deno.readTextFileSync(path);
      } catch (err) {
        if (err instanceof Deno.errors.NotFound) return undefined;
        throw err;
      }
    },
    cwd: Deno.cwd(),
    home: Deno.env.get("HOME"),
  };
}

type Yaml = Record<string, unknown>;

function cloudEntry(name: string, sources: CredentialSources): { entry: Yaml; file: string } {
  const dirs = [sources.cwd, ...(sources.home ? [join(sources.home, ".config/openstack")] : [])];
  const files = [
    ...(sources.env("OS_CLIENT_CONFIG_FILE") ? [sources.env("OS_CLIENT_CONFIG_FILE")!] : []),
    ...dirs.map((d) => join(d, "clouds.yaml")),
    "/etc/openstack/clouds.yaml",
  ];
  for (const file of files) {
    const text = sources.readFile(file);
    if (text === undefined) continue;
    const clouds = (parseYaml(text) as Yaml | null)?.clouds as Record<string, Yaml> | undefined;
    const entry = clouds?.[name];
    if (!entry) continue;
    // secure.yaml beside it holds the secrets of the same cloud (openstacksdk merges them).
    const secure = sources.readFile(file.replace(/clouds\.yaml$/, "secure.yaml"));
    const secret = secure
      ? ((parseYaml(secure) as Yaml | null)?.clouds as Record<string, Yaml> | undefined)?.[name]
      : undefined;
    const auth = { ...(entry.auth as Yaml ?? {}), ...(secret?.auth as Yaml ?? {}) };
    return { entry: { ...entry, ...secret, auth }, file };
  }
  throw new InvalidInputError(
    `cloud ${JSON.stringify(name)} is in no clouds.yaml (looked in ${
      files.join(", ")
    }): add it there or set OS_AUTH_URL and the other OS_* variables instead`,
  );
}

function str(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

/**
 * The credentials: the named cloud (`cloud`, else `OS_CLOUD`) from clouds.yaml, then each
 * `OS_*` variable over its field. Throws an {@link InvalidInputError} naming what is missing.
 */
export function loadCredentials(
  cloud: string | undefined,
  sources: CredentialSources = processSources(),
): Credentials {
  const name = cloud ?? str(sources.env("OS_CLOUD"));
  const found = name ? cloudEntry(name, sources) : undefined;
  const auth = (found?.entry.auth ?? {}) as Yaml;
  const picked: Partial<Credentials> = {};
  for (const [field, key, variable] of FIELDS) {
    const value = str(sources.env(variable)) ?? str(auth[key]);
    if (value !== undefined) (picked as Record<string, string>)[field] = value;
  }
  // OS_DEFAULT_DOMAIN / default_domain fill both domains when neither is given (openstackclient).
  const defaultDomain = str(sources.env("OS_DEFAULT_DOMAIN")) ?? str(auth.default_domain);
  if (!picked.userDomainName && !picked.userDomainId) picked.userDomainId = defaultDomain;
  if (!picked.projectDomainName && !picked.projectDomainId) picked.projectDomainId = defaultDomain;
  const authType = str(sources.env("OS_AUTH_TYPE")) ?? str(found?.entry.auth_type) ??
    (picked.applicationCredentialSecret ? "v3applicationcredential" : "password");
  const source = found ? `cloud ${name} in ${found.file}` : "the OS_* environment variables";
  const credentials: Credentials = {
    ...picked,
    authUrl: picked.authUrl ?? "",
    authType: normalAuthType(authType, source),
    regionName: str(sources.env("OS_REGION_NAME")) ?? str(found?.entry.region_name),
    interface: (str(sources.env("OS_INTERFACE")) ?? str(found?.entry.interface) ?? "public")
      .replace(/URL$/, ""),
    source,
  };
  checkComplete(credentials);
  return credentials;
}

function normalAuthType(type: string, source: string): Credentials["authType"] {
  if (["password", "v3password"].includes(type)) return "password";
  if (["v3applicationcredential", "applicationcredential"].includes(type)) {
    return "v3applicationcredential";
  }
  throw new InvalidInputError(
    `auth type ${
      JSON.stringify(type)
    } from ${source} is not supported: use password or v3applicationcredential`,
  );
}

function checkComplete(c: Credentials): void {
  const missing: string[] = [];
  if (!c.authUrl) missing.push("OS_AUTH_URL (auth_url)");
  if (c.authType === "password") {
    if (!c.username && !c.userId) missing.push("OS_USERNAME or OS_USER_ID");
    if (!c.password) missing.push("OS_PASSWORD");
    if (!c.projectName && !c.projectId) missing.push("OS_PROJECT_NAME or OS_PROJECT_ID");
  } else {
    if (!c.applicationCredentialSecret) missing.push("OS_APPLICATION_CREDENTIAL_SECRET");
    if (!c.applicationCredentialId && !c.applicationCredentialName) {
      missing.push("OS_APPLICATION_CREDENTIAL_ID or OS_APPLICATION_CREDENTIAL_NAME");
    }
    if (!c.applicationCredentialId && !c.username && !c.userId) {
      missing.push("OS_USERNAME or OS_USER_ID (an application credential given by name)");
    }
  }
  if (missing.length) {
    throw new InvalidInputError(
      `the zun provider's OpenStack credentials from ${c.source} lack ${
        missing.join(", ")
      }: set them (or OS_CLOUD naming a clouds.yaml entry)`,
    );
  }
  checkAuthUrl(c);
}

/**
 * Refuses a keystone URL that would carry the password or secret in clear: anything but https,
 * or http to this machine (a local proxy). The parsed URL decides, so `HTTP://` is http.
 */
export function checkAuthUrl(c: Pick<Credentials, "authUrl" | "authType" | "source">): void {
  const problem = credentialUrlProblem(c.authUrl);
  if (!problem) return;
  const secret = c.authType === "password" ? "password" : "application credential secret";
  throw new InvalidInputError(
    `OS_AUTH_URL (auth_url) from ${c.source} is ${problem}: the ${secret} would travel in clear; ` +
      "use keystone's https:// URL, or an http:// URL on 127.0.0.1 (a local proxy)",
  );
}
