/**
 * Finds and starts the provider named by `--provider`: a built-in by name, or any module by
 * file path or URL that exports `createProvider` (see {@link ProviderModule}), so a provider can
 * live outside this repository. Its `--provider-config` file (YAML or JSON) is parsed here and
 * handed to the factory as plain data.
 * @module
 */
import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parse as parseYaml } from "yaml";
import {
  isInvalidInput,
  type Provider,
  type ProviderDeps,
  type ProviderModule,
} from "../provider/mod.ts";

/**
 * Built-in providers by name, imported only when chosen. Add a provider here with one line:
 * `name: () => import("../providers/name/mod.ts")`.
 */
export const BUILTIN_PROVIDERS: Readonly<Record<string, () => Promise<ProviderModule>>> = {
  mock: () => import("../providers/mock/mod.ts"),
  process: () => import("../providers/process/mod.ts"),
  kubernetes: () => import("../providers/kubernetes/mod.ts"),
  fargate: () => import("../providers/fargate/mod.ts"),
  interlink: () => import("../providers/interlink/mod.ts"),
  aci: () => import("../providers/aci/mod.ts"),
  eci: () => import("../providers/eci/mod.ts"),
  slurm: () => import("../providers/slurm/mod.ts"),
  zun: () => import("../providers/zun/mod.ts"),
};

/** Names of the built-in providers, sorted. */
export function builtinProviderNames(): string[] {
  return Object.keys(BUILTIN_PROVIDERS).sort();
}

/** True if `provider` names a module (a path or a URL) rather than a built-in. */
export function isModuleReference(provider: string): boolean {
  return /^[a-z][a-z0-9+.-]+:/i.test(provider) || provider.includes("/") ||
    provider.includes("\\") || /\.(ts|js|mjs|mts|tsx|jsx)$/.test(provider);
}

/** True for an `http:` or `https:` module URL, which `--provider` refuses (no import permission). */
export function isRemoteModule(provider: string): boolean {
  return /^https?:/i.test(provider.trim());
}

/** A provider could not be found, imported, configured or constructed; the message says why. */
export class ProviderLoadError extends Error {
  override name = "ProviderLoadError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Options for {@link loadProvider}. */
export interface LoadProviderOptions {
  /** `--provider`: a built-in name, a file path (relative to `cwd`) or a URL. */
  provider: string;
  /** `--provider-config`: path to the provider's YAML/JSON config file. */
  providerConfig?: string;
  /** What the factory receives besides its config. */
  deps: ProviderDeps;
  /** Reads a text file; `Deno.readTextFile` unless a test injects one. */
  readFile?: (path: string) => Promise<string>;
  /** Directory that relative module paths are resolved against; `Deno.cwd()` by default. */
  cwd?: string;
}

/** Imports the provider module, parses its config file and calls its factory. */
export async function loadProvider(options: LoadProviderOptions): Promise<Provider> {
  const module = await importProviderModule(options.provider, options.cwd ?? Deno.cwd());
  const readFile = options.readFile ?? Deno.readTextFile;
  const config = options.providerConfig === undefined
    ? undefined
    : await readProviderConfig(options.providerConfig, readFile);
  const where = options.providerConfig === undefined
    ? "without a config file (--provider-config)"
    : `with config ${options.providerConfig}`;
  try {
    const provider = await module.createProvider(config, options.deps);
    if (!provider || typeof provider.createPod !== "function") {
      throw new ProviderLoadError(
        `provider "${options.provider}": createProvider returned no provider; it must return an object with createPod, updatePod, deletePod, getPod and listPods`,
      );
    }
    return provider;
  } catch (err) {
    if (err instanceof ProviderLoadError) throw err;
    const fix = isInvalidInput(err) ? "; fix the config file" : "";
    throw new ProviderLoadError(
      `provider "${options.provider}" failed to start ${where}: ${messageOf(err)}${fix}`,
      { cause: err },
    );
  }
}

/** Resolves `provider` to a module with a `createProvider` function. */
export async function importProviderModule(
  provider: string,
  cwd: string,
): Promise<ProviderModule> {
  const builtin = Object.hasOwn(BUILTIN_PROVIDERS, provider)
    ? BUILTIN_PROVIDERS[provider]
    : undefined;
  if (!builtin && !isModuleReference(provider)) {
    throw new ProviderLoadError(
      `unknown provider "${provider}"; use a built-in provider (${
        builtinProviderNames().join(", ")
      }) or a file path or URL of a module that exports createProvider`,
    );
  }
  const specifier = builtin ? "" : moduleSpecifier(provider, cwd);
  let module: Partial<ProviderModule>;
  try {
    module = builtin ? await builtin() : await import(specifier);
  } catch (err) {
    throw new ProviderLoadError(
      `provider module ${provider} could not be imported: ${
        messageOf(err)
      }; check the path or URL and that the module compiles`,
      { cause: err },
    );
  }
  if (typeof module.createProvider !== "function") {
    throw new ProviderLoadError(
      `provider module ${provider} does not export a createProvider function; export \`createProvider(config, deps)\` returning the provider`,
    );
  }
  return module as ProviderModule;
}

/** A URL for `import()`: URLs stay as they are, paths become absolute `file:` URLs. */
function moduleSpecifier(provider: string, cwd: string): string {
  if (/^[a-z][a-z0-9+.-]+:/i.test(provider) && !/^[a-z]:[\\/]/i.test(provider)) return provider;
  const path = isAbsolute(provider) ? provider : resolve(cwd, provider);
  return pathToFileURL(path).href;
}

/** Reads and parses a provider config file; an empty file gives `undefined`. */
export async function readProviderConfig(
  path: string,
  readFile: (path: string) => Promise<string>,
): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path);
  } catch (err) {
    throw new ProviderLoadError(
      `provider config ${path} cannot be read (${
        messageOf(err)
      }); check --provider-config and the file's permissions`,
      { cause: err },
    );
  }
  try {
    return parseYaml(text) ?? undefined;
  } catch (err) {
    throw new ProviderLoadError(
      `provider config ${path} is not valid YAML or JSON: ${messageOf(err)}`,
      { cause: err },
    );
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
