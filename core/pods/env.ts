/**
 * Resolves every container's environment before the provider sees the pod, following
 * kubernetes/kubernetes pkg/kubelet/kubelet_pods.go `makeEnvironmentVariables`: `envFrom` first
 * (ConfigMaps and Secrets, with prefix), then `env` in order (`value` with `$(VAR)` expansion over
 * the variables so far and the service links, or `valueFrom`), then the service-link variables
 * not already set. The result is the pod with each container's `env` replaced by plain values and
 * `envFrom` removed, so a provider needs no API access, plus the events to record.
 *
 * A missing mandatory reference fails the pod's sync with the kubelet's message (`configmap "x"
 * not found`, `couldn't find key k in ConfigMap ns/x`); the controller reports it as the kubelet
 * does (event `Failed`, container waiting `CreateContainerConfigError`) and retries.
 * @module
 */
import type {
  ConfigMap,
  Container,
  EnvFromSource,
  EnvVar,
  Pod,
  Secret,
  SecretKeySelector,
  Service,
} from "kubernetes-types/core/v1.d.ts";
import {
  type CallOptions,
  type PodAddresses,
  resolveFieldRef,
  resolveResourceFieldRef,
  type ResourceList,
} from "../../provider/mod.ts";
import type { SharedParts } from "../../k8s/watch/intern.ts";
import { expandVars } from "./expansion.ts";
import { serviceEnvVars } from "./service_env.ts";

export type { PodAddresses, ResourceList };

/** Where resolution reads ConfigMaps, Secrets, Services and the node's allocatable. */
export interface EnvSources {
  /** The ConfigMap, or `undefined` when it does not exist; throws when it cannot be read. */
  configMap(namespace: string, name: string, options: CallOptions): Promise<ConfigMap | undefined>;
  /** The Secret, or `undefined` when it does not exist; throws when it cannot be read. */
  secret(namespace: string, name: string, options: CallOptions): Promise<Secret | undefined>;
  /** Services that may give a pod in `namespace` links: that namespace's and `default`'s. */
  services(namespace: string): Iterable<Service>;
  /** The node's allocatable resources: the default for unset limits. */
  allocatable(): ResourceList;
}

/** An event that resolution wants recorded on the pod. */
export interface EnvEvent {
  type: "Normal" | "Warning";
  reason: string;
  message: string;
  /** `spec.containers{name}`, as the kubelet sets `involvedObject.fieldPath`. */
  fieldPath?: string;
}

/** The pod with resolved env, and the events to record. */
export interface ResolvedEnv {
  pod: Pod;
  events: EnvEvent[];
}

/** A container's environment cannot be built; the kubelet's `CreateContainerConfigError`. */
export class EnvResolutionError extends Error {
  override name = "EnvResolutionError";
  /** The container whose env failed. */
  readonly container: string;
  /** `spec.containers{name}` and friends. */
  readonly fieldPath: string;
  /**
   * For a missing mandatory ConfigMap or Secret (or key), the Warning virtual-kubelet records
   * besides the kubelet's `Failed` (`MandatoryConfigMapNotFound`, ...: internal/podutils/env.go).
   */
  readonly event?: EnvEvent;
  constructor(
    message: string,
    options: { container: string; fieldPath: string; cause?: unknown; event?: EnvEvent },
  ) {
    super(message, { cause: options.cause });
    this.container = options.container;
    this.fieldPath = options.fieldPath;
    this.event = options.event;
  }
}

/** True for an {@link EnvResolutionError}. */
export function isEnvResolutionError(err: unknown): err is EnvResolutionError {
  return err instanceof EnvResolutionError;
}

type ContainerList = "containers" | "initContainers" | "ephemeralContainers";
const LISTS: ContainerList[] = ["initContainers", "containers", "ephemeralContainers"];

/** How {@link resolvePodEnv} runs. */
export interface ResolveEnvOptions extends CallOptions {
  /**
   * fieldRef paths the provider's runtime resolves ({@link Provider.deferredFieldPaths}): env
   * vars using them stay fieldRefs, and `$(NAME)` references to them stay unexpanded.
   */
  deferredFieldPaths?: readonly string[];
  /** Mark Secret-sourced vars with their Secret and key beside the value (`secretEnvRefs`). */
  secretEnvRefs?: boolean;
  /**
   * Where the resolved spec's parts are shared with other pods' equal ones (the replicas of one
   * template resolve to one spec unless their env takes pod fields); they are frozen then.
   */
  sharedParts?: SharedParts;
}

/**
 * Resolves the env of every container of `pod`. `pod` is not changed: the result has its own spec,
 * container lists and containers, and shares every other part with `pod` (read-only, as the
 * informer's objects are).
 */
export async function resolvePodEnv(
  pod: Pod,
  sources: EnvSources,
  addresses: PodAddresses,
  options: ResolveEnvOptions = {},
): Promise<ResolvedEnv> {
  // A copy of the parts this changes (the spec, its container lists and their containers), the
  // rest shared with `pod`: the provider keeps this pod for the pod's life, and a whole copy of
  // every pod beside the informer's was a third of what the pods took of the heap (bench/reports/why.md).
  const spec = pod.spec && { ...pod.spec };
  for (const list of LISTS) {
    const containers = spec?.[list];
    if (spec && containers) spec[list] = containers.map((c) => ({ ...c })) as typeof containers;
  }
  const resolved: Pod = { ...pod, spec };
  const namespace = pod.metadata?.namespace ?? "";
  const links = serviceEnvVars(
    sources.services(namespace),
    namespace,
    pod.spec?.enableServiceLinks ?? true,
  );
  const ctx = new Resolution(resolved, sources, addresses, links, options);
  for (const list of LISTS) {
    for (const container of resolved.spec?.[list] ?? []) {
      const fieldPath = `spec.${list}{${container.name}}`;
      try {
        container.env = await ctx.containerEnv(container, fieldPath);
      } catch (err) {
        if (err instanceof EnvResolutionError) throw err;
        const message = err instanceof Error ? err.message : String(err);
        throw new EnvResolutionError(message, { container: container.name, fieldPath, cause: err });
      }
      delete container.envFrom;
    }
  }
  if (resolved.spec && options.sharedParts) {
    resolved.spec = options.sharedParts.intern(resolved.spec);
  }
  return { pod: resolved, events: ctx.events };
}

// Valid names before relaxed env var validation (apimachinery IsEnvVarName).
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

/** One pod's resolution: caches the ConfigMaps and Secrets read, collects events. */
class Resolution {
  readonly events: EnvEvent[] = [];
  #configMaps = new Map<string, ConfigMap | undefined>();
  #secrets = new Map<string, Secret | undefined>();

  constructor(
    readonly pod: Pod,
    readonly sources: EnvSources,
    readonly addresses: PodAddresses,
    readonly links: Map<string, string>,
    readonly options: ResolveEnvOptions,
  ) {}

  async containerEnv(container: Container, fieldPath: string): Promise<EnvVar[]> {
    const vars = new Map<string, string>();
    // Vars left for the provider's runtime; `$(NAME)` of them is kept for it to expand.
    const deferred = new Map<string, EnvVar>();
    // The Secret and key of each var whose value is a Secret's, for providers that ask.
    const fromSecret = new Map<string, SecretKeySelector>();
    for (const from of container.envFrom ?? []) {
      await this.#envFrom(from, vars, fieldPath, fromSecret);
    }
    const lookup = (name: string) =>
      deferred.has(name) ? undefined : vars.get(name) ?? this.links.get(name);
    const deferredPaths = this.options.deferredFieldPaths ?? [];
    for (const envVar of container.env ?? []) {
      const path = envVar.value ? undefined : envVar.valueFrom?.fieldRef?.fieldPath;
      if (path && deferredPaths.includes(path)) {
        vars.set(envVar.name, "");
        deferred.set(envVar.name, {
          name: envVar.name,
          valueFrom: structuredClone(envVar.valueFrom),
        });
        continue;
      }
      let value: string | undefined = envVar.value ?? "";
      if (value !== "") value = expandVars(value, lookup);
      else if (envVar.valueFrom) value = await this.#valueFrom(container, envVar, fieldPath);
      if (value === undefined) continue;
      vars.set(envVar.name, value);
      deferred.delete(envVar.name);
      const secretRef = envVar.value ? undefined : envVar.valueFrom?.secretKeyRef;
      if (secretRef) fromSecret.set(envVar.name, { name: secretRef.name, key: secretRef.key });
      else fromSecret.delete(envVar.name);
    }
    for (const [name, value] of this.links) if (!vars.has(name)) vars.set(name, value);
    const marked = this.options.secretEnvRefs ? fromSecret : new Map();
    return [...vars].map(([name, value]) => {
      const secretKeyRef = marked.get(name);
      return deferred.get(name) ??
        (secretKeyRef ? { name, value, valueFrom: { secretKeyRef } } : { name, value });
    });
  }

  async #envFrom(
    from: EnvFromSource,
    vars: Map<string, string>,
    fieldPath: string,
    fromSecret: Map<string, SecretKeySelector>,
  ) {
    const ref = from.configMapRef ?? from.secretRef;
    if (!ref) return;
    const kind = from.configMapRef ? "configMap" : "secret";
    const data = kind === "configMap"
      ? (await this.#configMap(ref.name ?? "", ref.optional ?? false, fieldPath))?.data
      : decodeSecret(await this.#secret(ref.name ?? "", ref.optional ?? false, fieldPath));
    if (data === undefined) return;
    const invalid: string[] = [];
    for (const [key, value] of Object.entries(data)) {
      const name = (from.prefix ?? "") + key;
      if (!ENV_NAME.test(name)) {
        invalid.push(name);
        continue;
      }
      vars.set(name, value);
      if (kind === "secret") fromSecret.set(name, { name: ref.name, key });
      else fromSecret.delete(name);
    }
    if (invalid.length > 0) {
      this.events.push({
        type: "Warning",
        reason: "InvalidEnvironmentVariableNames",
        message: `Keys [${invalid.sort().join(", ")}] from the EnvFrom ${kind} ` +
          `${this.pod.metadata?.namespace}/${ref.name} were skipped since they are considered ` +
          "invalid environment variable names.",
        fieldPath,
      });
    }
  }

  /** The value of one `valueFrom`; `undefined` when an optional reference is missing. */
  async #valueFrom(container: Container, envVar: EnvVar, fieldPath: string) {
    const from = envVar.valueFrom!;
    if (from.fieldRef) return resolveFieldRef(this.pod, from.fieldRef, this.addresses);
    if (from.resourceFieldRef) {
      return resolveResourceFieldRef(this.pod, from.resourceFieldRef, {
        container,
        allocatable: this.sources.allocatable(),
      });
    }
    const ref = from.configMapKeyRef ?? from.secretKeyRef;
    if (!ref) return undefined;
    const optional = ref.optional ?? false;
    const isConfigMap = from.configMapKeyRef !== undefined;
    const data = isConfigMap
      ? (await this.#configMap(ref.name ?? "", optional, fieldPath))
      : await this.#secret(ref.name ?? "", optional, fieldPath);
    if (data === undefined) return undefined;
    const value = isConfigMap
      ? (data as ConfigMap).data?.[ref.key]
      : decodeSecret(data as Secret)?.[ref.key];
    if (value !== undefined) return value;
    const kind = isConfigMap ? "ConfigMap" : "Secret";
    if (optional) {
      this.#optionalMissing(
        `Optional${kind}KeyNotFound`,
        `key ${ref.key} in ${kind}`,
        ref.name,
        fieldPath,
      );
      return undefined;
    }
    throw new EnvResolutionError(
      `couldn't find key ${ref.key} in ${kind} ${this.pod.metadata?.namespace}/${ref.name}`,
      {
        container: container.name,
        fieldPath,
        event: {
          type: "Warning",
          reason: `Mandatory${kind}KeyNotFound`,
          message: `key "${ref.key}" does not exist in ${kind.toLowerCase()} "${ref.name}"`,
          fieldPath,
        },
      },
    );
  }

  #configMap(name: string, optional: boolean, fieldPath: string) {
    return this.#read(
      this.#configMaps,
      "configmap",
      name,
      optional,
      fieldPath,
      (ns, o) => this.sources.configMap(ns, name, o),
    );
  }

  #secret(name: string, optional: boolean, fieldPath: string) {
    return this.#read(
      this.#secrets,
      "secret",
      name,
      optional,
      fieldPath,
      (ns, o) => this.sources.secret(ns, name, o),
    );
  }

  async #read<T>(
    cache: Map<string, T | undefined>,
    kind: "configmap" | "secret",
    name: string,
    optional: boolean,
    fieldPath: string,
    get: (namespace: string, options: CallOptions) => Promise<T | undefined>,
  ): Promise<T | undefined> {
    if (!cache.has(name)) {
      cache.set(name, await get(this.pod.metadata?.namespace ?? "", this.options));
    }
    const found = cache.get(name);
    if (found !== undefined) return found;
    const label = kind === "configmap" ? "ConfigMap" : "Secret";
    if (optional) {
      this.#optionalMissing(`Optional${label}NotFound`, label, name, fieldPath);
      return undefined;
    }
    // The kubelet's configmap/secret managers answer with this NotFound message.
    throw new EnvResolutionError(`${kind} "${name}" not found`, {
      container: fieldPath.slice(fieldPath.indexOf("{") + 1, -1),
      fieldPath,
      event: {
        type: "Warning",
        reason: `Mandatory${label}NotFound`,
        message: `${kind} "${name}" not found`,
        fieldPath,
      },
    });
  }

  // The kubelet is silent here; virtual-kubelet's reasons (internal/podutils/env.go) tell the
  // user why a variable is absent.
  #optionalMissing(reason: string, what: string, name: string | undefined, fieldPath: string) {
    this.events.push({
      type: "Normal",
      reason,
      message: `skipping optional envvar source: ${what} ${this.pod.metadata?.namespace}/${name} ` +
        "not found",
      fieldPath,
    });
  }
}

/** A Secret's `data` (base64) as text, with `stringData` for objects not written by the API. */
function decodeSecret(secret: Secret | undefined): Record<string, string> | undefined {
  if (secret === undefined) return undefined;
  const out: Record<string, string> = { ...secret.stringData };
  const decoder = new TextDecoder();
  for (const [key, value] of Object.entries(secret.data ?? {})) {
    out[key] = decoder.decode(Uint8Array.from(atob(value), (c) => c.charCodeAt(0)));
  }
  return out;
}
