/**
 * The downward API as the kubelet resolves it, for env vars and for downwardAPI volume files
 * alike, so that a pod reads one value both ways.
 *
 * - fieldRef: paths are checked against the allow-list of kubernetes/kubernetes
 *   pkg/apis/core/pods/helpers.go `ConvertDownwardAPIFieldLabel`, then resolved as
 *   pkg/kubelet/kubelet_pods.go `podFieldSelectorRuntimeValue` and pkg/fieldpath/fieldpath.go
 *   `ExtractFieldPathAsString` do; labels and annotations are written as `FormatMap` writes them
 *   (`key="value"` lines, Go's `%q`). Volumes take only the metadata fields
 *   (pkg/apis/core/validation `validVolumeDownwardAPIFieldPathExpressions`). Unlike
 *   virtual-kubelet (virtual-kubelet#1011), status.podIP(s) and status.hostIP(s) resolve: the
 *   caller passes the IPs the provider assigned.
 * - resourceFieldRef: a container's requests and limits with a divisor, exactly as
 *   pkg/api/v1/resource/helpers.go `ExtractContainerResourceValue` (CPU as
 *   ceil(milli / divisor milli), everything else as ceil(value / divisor value)); unset limits
 *   default to the node's allocatable (`ExtractResourceValueByContainerNameAndNodeAllocatable`).
 * @module
 */
import type {
  Container,
  ObjectFieldSelector,
  Pod,
  ResourceFieldSelector,
} from "kubernetes-types/core/v1.d.ts";
import {
  parseQuantity,
  type Quantity,
  quantityMilliValue,
  quantityValue,
} from "../k8s/quantity.ts";
import { InvalidInputError, TransientError } from "./errors.ts";

/** IPs that the pod's status fields report. */
export interface PodAddresses {
  /** The pod's IPs, primary first (from the provider). */
  podIps: string[];
  /** The node's IPs, primary first. */
  hostIps: string[];
}

/** Quantities by resource name, as in `status.allocatable`. */
export type ResourceList = Record<string, string | number>;

const ALLOWED = new Set([
  "metadata.annotations",
  "metadata.labels",
  "metadata.name",
  "metadata.namespace",
  "metadata.uid",
  "spec.nodeName",
  "spec.restartPolicy",
  "spec.serviceAccountName",
  "spec.schedulerName",
  "status.phase",
  "status.hostIP",
  "status.hostIPs",
  "status.podIP",
  "status.podIPs",
]);

const VOLUME_ALLOWED = [
  "metadata.annotations",
  "metadata.labels",
  "metadata.name",
  "metadata.namespace",
  "metadata.uid",
];

const SUBSCRIPT = /^metadata\.(annotations|labels)\['(.*)'\]$/s;

/**
 * Resolves an env var's fieldRef; throws {@link InvalidInputError} with the kubelet's message for
 * an unsupported path.
 *
 * @example Usage
 * ```ts
 * import { resolveFieldRef } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * const pod = { metadata: { name: "web-0", namespace: "shop" }, spec: { containers: [] } };
 * const addresses = { podIps: ["10.1.0.7"], hostIps: ["192.168.1.2"] };
 * assert.equal(resolveFieldRef(pod, { fieldPath: "metadata.name" }, addresses), "web-0");
 * assert.equal(resolveFieldRef(pod, { fieldPath: "status.podIP" }, addresses), "10.1.0.7");
 * ```
 */
export function resolveFieldRef(
  pod: Pod,
  ref: ObjectFieldSelector,
  addresses: PodAddresses,
): string {
  const path = ref.fieldPath === "spec.host" ? "spec.nodeName" : ref.fieldPath;
  if (ref.apiVersion && ref.apiVersion !== "v1") {
    throw new InvalidInputError(`unsupported pod version: ${ref.apiVersion}`);
  }
  if (SUBSCRIPT.test(path)) return metadataField(pod, path);
  if (!ALLOWED.has(path)) {
    throw new InvalidInputError(`field label not supported: ${ref.fieldPath}`);
  }
  switch (path) {
    case "spec.nodeName":
      return pod.spec?.nodeName ?? "";
    case "spec.serviceAccountName":
      return pod.spec?.serviceAccountName ?? "";
    case "status.hostIP":
      return hostIps(addresses)[0];
    case "status.hostIPs":
      return hostIps(addresses).join(",");
    case "status.podIP":
      return addresses.podIps[0] ?? "";
    case "status.podIPs":
      return addresses.podIps.join(",");
  }
  // spec.restartPolicy, spec.schedulerName and status.phase pass the allow-list but, as in the
  // kubelet, have no runtime value; metadataField says so.
  return metadataField(pod, path);
}

/**
 * Resolves a downwardAPI volume item's fieldRef (metadata fields only, as the apiserver
 * validates them); throws {@link InvalidInputError} for any other path.
 *
 * @example Usage
 * ```ts
 * import { resolveVolumeFieldRef } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * const pod = { metadata: { name: "web-0", labels: { app: "web" } }, spec: { containers: [] } };
 * assert.equal(resolveVolumeFieldRef(pod, { fieldPath: "metadata.labels" }), 'app="web"');
 * ```
 */
export function resolveVolumeFieldRef(pod: Pod, ref: ObjectFieldSelector): string {
  if (!SUBSCRIPT.test(ref.fieldPath) && !VOLUME_ALLOWED.includes(ref.fieldPath)) {
    throw new InvalidInputError(
      `downwardAPI volume field ${ref.fieldPath} is not supported in volumes; use ${
        VOLUME_ALLOWED.join(", ")
      } or metadata.labels['key'] / metadata.annotations['key']`,
    );
  }
  return metadataField(pod, ref.fieldPath);
}

function hostIps(addresses: PodAddresses): string[] {
  if (addresses.hostIps.length === 0) throw new TransientError("node has no IP address");
  return addresses.hostIps;
}

/** pkg/fieldpath/fieldpath.go `ExtractFieldPathAsString`. */
function metadataField(pod: Pod, path: string): string {
  const meta = pod.metadata ?? {};
  const subscript = SUBSCRIPT.exec(path);
  if (subscript) {
    const map = subscript[1] === "labels" ? meta.labels : meta.annotations;
    return map?.[subscript[2]] ?? "";
  }
  switch (path) {
    case "metadata.name":
      return meta.name ?? "";
    case "metadata.namespace":
      return meta.namespace ?? "";
    case "metadata.uid":
      return meta.uid ?? "";
    case "metadata.labels":
      return formatMap(meta.labels ?? {});
    case "metadata.annotations":
      return formatMap(meta.annotations ?? {});
  }
  throw new InvalidInputError(`unsupported fieldPath: ${path}`);
}

/**
 * `key="value"` lines sorted by key, values quoted as Go's `%q` does (fieldpath.FormatMap).
 *
 * @example Usage
 * ```ts
 * import { formatMap } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * assert.equal(formatMap({ tier: "web", app: "shop" }), 'app="shop"\ntier="web"');
 * ```
 */
export function formatMap(map: Record<string, string>): string {
  return Object.keys(map).sort().map((key) => `${key}=${goQuote(map[key])}`).join("\n");
}

const ESCAPES: Record<string, string> = {
  "\x07": "\\a",
  "\b": "\\b",
  "\f": "\\f",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
  "\v": "\\v",
  "\\": "\\\\",
  '"': '\\"',
};

/**
 * A string quoted like Go's `strconv.Quote` (`%q`).
 *
 * @example Usage
 * ```ts
 * import { goQuote } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * assert.equal(goQuote('say "hi"\n'), '"say \\"hi\\"\\n"');
 * ```
 */
export function goQuote(value: string): string {
  let out = '"';
  for (const ch of value) {
    const code = ch.codePointAt(0)!;
    if (ESCAPES[ch]) out += ESCAPES[ch];
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, "0")}`;
    else if (/\p{C}|\p{Zl}|\p{Zp}/u.test(ch) && ch !== " ") {
      out += code > 0xffff
        ? `\\U${code.toString(16).padStart(8, "0")}`
        : `\\u${code.toString(16).padStart(4, "0")}`;
    } else out += ch;
  }
  return out + '"';
}

/** The container a resourceFieldRef reads when it names none, and the node's allocatable. */
export interface ResourceFieldRefOptions {
  /** The env var's own container; a volume item always names its container instead. */
  container?: Pick<Container, "name" | "resources">;
  /** The default for unset limits (`status.allocatable` of the node). */
  allocatable: ResourceList;
}

const DEFAULTED_LIMITS = ["cpu", "memory", "ephemeral-storage"];

/**
 * Resolves one resourceFieldRef; throws {@link InvalidInputError} for an unknown resource or
 * container.
 *
 * @example Usage
 * ```ts
 * import { resolveResourceFieldRef } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * const main = { name: "main", resources: { limits: { memory: "128Mi" } } };
 * const pod = { spec: { containers: [main] } };
 * const memory = resolveResourceFieldRef(pod, { resource: "limits.memory" }, {
 *   container: main,
 *   allocatable: { memory: "16Gi" },
 * });
 * assert.equal(memory, String(128 * 1024 * 1024));
 * ```
 */
export function resolveResourceFieldRef(
  pod: Pod,
  ref: ResourceFieldSelector,
  options: ResourceFieldRefOptions,
): string {
  let target = options.container;
  if (ref.containerName) {
    target = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])]
      .find((c) => c.name === ref.containerName);
  }
  if (!target) {
    throw new InvalidInputError(
      ref.containerName
        ? `container ${ref.containerName} not found`
        : `resourceFieldRef ${ref.resource} names no container; set containerName`,
    );
  }
  const divisor = ref.divisor === undefined || isZero(String(ref.divisor))
    ? parseQuantity("1")
    : parseQuantity(String(ref.divisor));
  const dot = ref.resource.indexOf(".");
  const kind = ref.resource.slice(0, dot);
  const name = ref.resource.slice(dot + 1);
  const supported = ["cpu", "memory", "ephemeral-storage"].includes(name) ||
    name.startsWith("hugepages-");
  if ((kind !== "requests" && kind !== "limits") || !supported) {
    throw new InvalidInputError(`unsupported container resource : ${ref.resource}`);
  }
  const list = kind === "limits"
    ? withDefaultLimits(target.resources?.limits ?? {}, options.allocatable)
    : target.resources?.requests ?? {};
  const amount = parseQuantity(String(list[name] ?? "0"));
  return divide(amount, divisor, name === "cpu");
}

function isZero(text: string): boolean {
  try {
    return parseQuantity(text).numerator === 0n;
  } catch {
    return false;
  }
}

function withDefaultLimits(limits: ResourceList, allocatable: ResourceList): ResourceList {
  const merged: ResourceList = { ...limits };
  for (const name of DEFAULTED_LIMITS) {
    if (merged[name] === undefined && allocatable[name] !== undefined) {
      merged[name] = allocatable[name];
    }
  }
  return merged;
}

// Go divides the integer values as float64 and rounds up; Number() does the same conversion.
function divide(amount: Quantity, divisor: Quantity, cpu: boolean): string {
  const a = Number(cpu ? quantityMilliValue(amount) : quantityValue(amount));
  const d = Number(cpu ? quantityMilliValue(divisor) : quantityValue(divisor));
  return String(Math.ceil(a / d));
}
