/**
 * What the zun provider refuses rather than send to Zun (security issue #61): a security context
 * Zun cannot enforce, a hostPort Zun ignores, a keystone URL or a catalog endpoint that would
 * carry a credential in clear, a Secret's value in the env when the config says so; and ports
 * are opened (to every address, as Zun does) only when the config asks. No stack: every URL here
 * is a string for validation, and the one call that could dial is caught by a stub of `fetch`.
 */
import assert from "node:assert/strict";
import type { Container, Pod, PodSecurityContext } from "kubernetes-types/core/v1.d.ts";
import { FakeClock } from "../../../base/fake_clock.ts";
import { getLogger } from "../../../base/log.ts";
import { isInvalidInput } from "../../../provider/mod.ts";
import { capsuleCreateBody } from "../../../providers/zun/request/capsule.ts";
import { parseZunConfig } from "../../../providers/zun/config.ts";
import {
  type Credentials,
  type CredentialSources,
  loadCredentials,
} from "../../../providers/zun/credentials.ts";
import { authenticate, endpointOf } from "../../../providers/zun/client/keystone.ts";
import { ZunProvider } from "../../../providers/zun/provider.ts";
import type { ZunApi } from "../../../providers/zun/client/zun_api.ts";

function pod(container: Partial<Container>, securityContext?: PodSecurityContext): Pod {
  return {
    metadata: { namespace: "ns", name: "web", uid: "uid-1" },
    spec: { containers: [{ name: "main", image: "busybox", ...container }], securityContext },
  };
}

type Body = { template: { spec: { containers: Record<string, unknown>[] } } };

function firstContainer(p: Pod, options: Record<string, unknown> = {}): Record<string, unknown> {
  const body = capsuleCreateBody(p, { nodeName: "vk", exposePorts: true, ...options }) as Body;
  return body.template.spec.containers[0];
}

function refused(p: Pod, message: RegExp, options: Record<string, unknown> = {}): void {
  assert.throws(
    () => capsuleCreateBody(p, { nodeName: "vk", exposePorts: true, ...options }),
    (err: Error) => isInvalidInput(err) && message.test(err.message),
    `accepted: ${JSON.stringify(p.spec)}`,
  );
}

Deno.test("a security context Zun cannot enforce fails the pod, naming the field", () => {
  const cases: [Partial<Container>, PodSecurityContext | undefined, string][] = [
    [{ securityContext: { privileged: true } }, undefined, "privileged"],
    [{}, { runAsNonRoot: true }, "runAsNonRoot"],
    [{ securityContext: { runAsUser: 1000 } }, undefined, "runAsUser"],
    [{}, { runAsUser: 1000, runAsGroup: 1000 }, "runAsUser"],
    [{ securityContext: { runAsGroup: 1000 } }, undefined, "runAsGroup"],
    [{ securityContext: { readOnlyRootFilesystem: true } }, undefined, "readOnlyRootFilesystem"],
    [
      { securityContext: { allowPrivilegeEscalation: false } },
      undefined,
      "allowPrivilegeEscalation",
    ],
    [{ securityContext: { capabilities: { drop: ["ALL"] } } }, undefined, "capabilities.drop"],
    [{ securityContext: { capabilities: { add: ["NET_ADMIN"] } } }, undefined, "capabilities.add"],
    [{}, { seccompProfile: { type: "Localhost", localhostProfile: "p.json" } }, "seccompProfile"],
    [{ securityContext: { seccompProfile: { type: "Unconfined" } } }, undefined, "seccompProfile"],
    [{}, { appArmorProfile: { type: "Localhost", localhostProfile: "p" } }, "appArmorProfile"],
    [{}, { seLinuxOptions: { level: "s0:c1" } }, "seLinuxOptions"],
    [{ securityContext: { procMount: "Unmasked" } }, undefined, "procMount"],
  ];
  for (const [container, podContext, field] of cases) {
    refused(
      pod(container, podContext),
      new RegExp(`^spec\\.containers\\[0\\]\\.securityContext\\.${field}: Zun's capsule API`),
    );
  }
  refused(
    pod({}, { sysctls: [{ name: "net.core.somaxconn", value: "1024" }] }),
    /^spec\.securityContext\.sysctls: Zun's capsule API/,
  );
});

Deno.test("a security context that asks only for Zun's defaults is accepted", () => {
  const c = firstContainer(pod({
    securityContext: {
      privileged: false,
      allowPrivilegeEscalation: true,
      readOnlyRootFilesystem: false,
      runAsNonRoot: false,
      capabilities: { add: [], drop: [] },
      seccompProfile: { type: "RuntimeDefault" },
      appArmorProfile: { type: "RuntimeDefault" },
      procMount: "Default",
    },
  }, { fsGroup: 2000 }));
  assert.equal(c.image, "busybox");
});

Deno.test("a hostPort fails the pod: Zun binds no port of its hosts", () => {
  const ports = [{ containerPort: 80 }, { containerPort: 8080, hostPort: 18080 }];
  refused(pod({ ports }), /^spec\.containers\[0\]\.ports\[1\]\.hostPort: Zun binds no port/);
  refused(pod({ ports }), /hostPort/, { exposePorts: false });
  assert.deepEqual(firstContainer(pod({ ports: [{ containerPort: 80 }] })).ports, [
    { containerPort: 80, protocol: "TCP" },
  ]);
});

Deno.test("ports are opened only when the config asks: Zun opens them to every address", () => {
  const parsed = parseZunConfig(undefined);
  assert.ok(parsed.ok);
  assert.equal(parsed.config.exposePorts, false, "exposePorts is off by default");
  const body = capsuleCreateBody(pod({ ports: [{ containerPort: 80 }] }), {
    nodeName: "vk",
    exposePorts: parsed.config.exposePorts,
  }) as Body;
  assert.equal(body.template.spec.containers[0].ports, undefined);
});

function sources(env: Record<string, string>): CredentialSources {
  return { env: (n) => env[n], readFile: () => undefined, cwd: "/nowhere", home: undefined };
}

const PASSWORD = { OS_USERNAME: "alice", OS_PASSWORD: "s3cret", OS_PROJECT_NAME: "team" };

Deno.test("a keystone URL that would carry the password in clear is refused, whatever its case", () => {
  // Strings only: loadCredentials reads them and dials nothing.
  for (const url of ["HTTP://10.0.0.1:5000/v3", "http://keystone.example:5000", "ftp://k/"]) {
    assert.throws(
      () => loadCredentials(undefined, sources({ ...PASSWORD, OS_AUTH_URL: url })),
      (err: Error) =>
        isInvalidInput(err) &&
        /^OS_AUTH_URL \(auth_url\) from the OS_\* environment variables is .*: the password would travel in clear; use keystone's https:\/\/ URL/
          .test(err.message),
      `${url} was accepted`,
    );
  }
  assert.throws(
    () =>
      loadCredentials(
        undefined,
        sources({
          OS_AUTH_URL: "http://10.0.0.1:5000/v3",
          OS_APPLICATION_CREDENTIAL_ID: "ac-1",
          OS_APPLICATION_CREDENTIAL_SECRET: "shh",
        }),
      ),
    /is plain http to 10\.0\.0\.1:5000, which is not this machine: the application credential secret/,
  );
  for (
    const url of [
      "https://x",
      "http://127.0.0.1:5000/v3",
      "HTTP://127.3.2.1:5000",
      "http://localhost:5000",
      "http://[::1]:5000",
    ]
  ) {
    const c = loadCredentials(undefined, sources({ ...PASSWORD, OS_AUTH_URL: url }));
    assert.equal(c.authUrl, url);
  }
});

Deno.test("credentials with a plain http keystone URL are refused before anything is sent", async () => {
  const credentials: Credentials = {
    authUrl: "HTTP://10.0.0.1:5000/v3",
    authType: "password",
    username: "alice",
    password: "s3cret",
    projectName: "team",
    interface: "public",
    source: "a test",
  };
  const dialled: string[] = [];
  const realFetch = globalThis.fetch;
  globalThis.fetch = (input: string | URL | Request) => {
    dialled.push(String(input instanceof Request ? input.url : input));
    return Promise.reject(new TypeError("this test dials nothing"));
  };
  let err: Error | undefined;
  try {
    await authenticate(credentials, "container").catch((e) => err = e);
  } finally {
    globalThis.fetch = realFetch;
  }
  assert.deepEqual(dialled, [], "the password was sent");
  assert.ok(isInvalidInput(err) && /password would travel in clear/.test(err.message), `${err}`);
});

Deno.test("a catalog endpoint that would carry the token in clear is refused", () => {
  const catalog = (url: string) => [{
    type: "container",
    endpoints: [{ interface: "public", region_id: "One", url }],
  }];
  for (const url of ["http://10.0.0.2:9517/v1", "HTTP://zun.example/v1"]) {
    assert.throws(
      () => endpointOf(catalog(url), "container", { interface: "public" }),
      (err: Error) =>
        isInvalidInput(err) &&
        /container service \(Zun\) at .*which is plain http to .*: the token would travel in clear/
          .test(err.message),
      `${url} was accepted`,
    );
  }
  assert.equal(
    endpointOf(catalog("http://127.0.0.1:9517/v1/"), "container", { interface: "public" }),
    "http://127.0.0.1:9517/v1",
  );
});

const SECRET_ENV = [
  { name: "PLAIN", value: "p" },
  { name: "TOKEN", value: "t0k", valueFrom: { secretKeyRef: { name: "db", key: "token" } } },
];

Deno.test("with secretEnv: refuse a Secret's value never reaches Zun: the pod fails naming it", () => {
  const parsed = parseZunConfig({ secretEnv: "refuse" });
  assert.ok(parsed.ok, !parsed.ok ? parsed.errors.join("; ") : "");
  refused(
    pod({ env: SECRET_ENV }),
    /^spec\.containers\[0\]\.env TOKEN comes from Secret db key token: Zun keeps a pod's env/,
    { secretEnv: parsed.config.secretEnv },
  );
  // env (the default) sends the value, and only the value.
  assert.deepEqual(firstContainer(pod({ env: SECRET_ENV })).env, { PLAIN: "p", TOKEN: "t0k" });
  const defaults = parseZunConfig(undefined);
  assert.ok(defaults.ok);
  assert.equal(defaults.config.secretEnv, "env");
});

Deno.test("the provider asks the core to mark Secret-sourced env vars, so secretEnv: refuse sees them", async () => {
  const parsed = parseZunConfig(undefined);
  assert.ok(parsed.ok);
  const api = {
    call: () => Promise.resolve({ status: 200, body: { capsules: [] } }),
  } as unknown as ZunApi;
  const stop = new AbortController();
  const provider = new ZunProvider(parsed.config, {
    nodeName: "vk",
    log: getLogger(["test"]),
    clock: new FakeClock(),
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal: stop.signal,
  }, api);
  try {
    assert.equal(provider.secretEnvRefs, true);
  } finally {
    stop.abort();
    await provider.close();
  }
});
