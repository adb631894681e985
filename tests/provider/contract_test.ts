import assert from "node:assert/strict";
import { getLogger } from "../../base/log.ts";
import {
  InvalidInputError,
  isInvalidInput,
  isNotFound,
  isNotSupported,
  isTransient,
  NotFoundError,
  NotSupportedError,
  providerCapabilities,
  type ProviderDeps,
  TransientError,
} from "../../provider/mod.ts";
import {
  builtinProviderNames,
  isModuleReference,
  loadProvider,
  ProviderLoadError,
} from "../../app/provider_loader.ts";
import { FakeClock } from "../fakes/clock.ts";

function deps(signal: AbortSignal): ProviderDeps {
  return {
    nodeName: "vk-test",
    log: getLogger(["vkubelet", "test"]),
    clock: new FakeClock(),
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal,
  };
}

const files = (contents: Record<string, string>) => (path: string) =>
  path in contents
    ? Promise.resolve(contents[path])
    : Promise.reject(new Deno.errors.NotFound(`No such file: ${path}`));

async function loadError(options: Partial<Parameters<typeof loadProvider>[0]>) {
  const signal = new AbortController().signal;
  const err = await loadProvider({ provider: "mock", deps: deps(signal), ...options }).then(
    () => undefined,
    (e) => e,
  );
  assert.ok(err instanceof ProviderLoadError, `expected a ProviderLoadError, got ${err}`);
  return err.message;
}

Deno.test("the mock is a built-in provider, loaded by name", async () => {
  assert.deepEqual(builtinProviderNames(), [
    "aci",
    "eci",
    "fargate",
    "interlink",
    "kubernetes",
    "mock",
    "process",
    "slurm",
    "zun",
  ]);
  const provider = await loadProvider({
    provider: "mock",
    deps: deps(new AbortController().signal),
  });
  assert.ok(providerCapabilities(provider).includes("notifyPods"));
  await provider.close?.();
});

Deno.test("an unknown provider name lists the built-ins", async () => {
  const message = await loadError({ provider: "mokc" });
  assert.match(
    message,
    /unknown provider "mokc"; use a built-in provider \(aci, eci, fargate, interlink, kubernetes, mock, process, slurm, zun\)/,
  );
});

Deno.test("names, paths and URLs are told apart", () => {
  assert.equal(isModuleReference("mock"), false);
  assert.equal(isModuleReference("./my_provider.ts"), true);
  assert.equal(isModuleReference("/opt/p/mod.js"), true);
  assert.equal(isModuleReference("https://example.com/p.ts"), true);
  assert.equal(isModuleReference("file:///opt/p.ts"), true);
});

Deno.test("an external module by path is loaded and given its parsed config", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/echo_provider.ts`,
      `export function createProvider(config, deps) {
        return { config, nodeName: deps.nodeName, createPod() {}, updatePod() {}, deletePod() {},
          getPod() {}, listPods() { return []; } };
      }`,
    );
    const provider = await loadProvider({
      provider: "./echo_provider.ts",
      providerConfig: "p.yaml",
      cwd: dir,
      deps: deps(new AbortController().signal),
      readFile: files({ "p.yaml": "size: 3\n" }),
    }) as unknown as { config: unknown; nodeName: string };
    assert.deepEqual(provider.config, { size: 3 });
    assert.equal(provider.nodeName, "vk-test");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a module without createProvider says so", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/empty.ts`, "export const nothing = 1;\n");
    const message = await loadError({ provider: `${dir}/empty.ts` });
    assert.match(message, /does not export a createProvider function/);
    const missing = await loadError({ provider: `${dir}/absent.ts` });
    assert.match(missing, /could not be imported/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a provider config that fails to read or parse names the path", async () => {
  const unreadable = await loadError({ providerConfig: "/nope.yaml", readFile: files({}) });
  assert.match(unreadable, /^provider config \/nope\.yaml cannot be read/);
  const broken = await loadError({
    providerConfig: "b.yaml",
    readFile: files({ "b.yaml": "a: [" }),
  });
  assert.match(broken, /^provider config b\.yaml is not valid YAML or JSON/);
});

Deno.test("a provider rejecting its config names the file and the field", async () => {
  const message = await loadError({
    providerConfig: "mock.yaml",
    readFile: files({ "mock.yaml": "podCIDR: 10.0.0.0/16\ncapacity: { cpu: 10x }\n" }),
  });
  assert.match(message, /provider "mock" failed to start with config mock\.yaml/);
  assert.match(message, /podCIDR: 10\.0\.0\.0\/16 is not inside the loopback range/);
  assert.match(message, /capacity\.cpu: "10x" is not a Kubernetes quantity/);
});

Deno.test("provider errors carry name and cause and are recognised by predicates", () => {
  const cause = new Error("backend said no");
  const transient = new TransientError("busy", { cause, retryAfterMs: 500 });
  assert.equal(transient.name, "TransientError");
  assert.equal(transient.cause, cause);
  assert.equal(transient.retryAfterMs, 500);
  assert.ok(isTransient(transient) && !isNotFound(transient));
  assert.ok(isInvalidInput(new InvalidInputError("bad")));
  assert.ok(isNotFound(new NotFoundError("gone")));
  assert.ok(isNotSupported(new NotSupportedError("no attach")));
  // An error from another copy of the module (a provider loaded by URL) is recognised by name.
  const foreign = Object.assign(new Error("gone"), { name: "NotFoundError" });
  assert.ok(isNotFound(foreign));
  assert.ok(!isNotFound("NotFoundError"));
});
