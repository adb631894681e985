/**
 * `env[].valueFrom.fieldRef`: the downward API fields the kubelet resolves, with the same
 * answers. Paths are checked against the allow-list of kubernetes/kubernetes
 * pkg/apis/core/pods/helpers.go `ConvertDownwardAPIFieldLabel`, then resolved as
 * pkg/kubelet/kubelet_pods.go `podFieldSelectorRuntimeValue` and pkg/fieldpath/fieldpath.go
 * `ExtractFieldPathAsString` do. Unlike virtual-kubelet (virtual-kubelet#1011), status.podIP(s)
 * and status.hostIP(s) resolve: the caller passes the IPs the provider assigned.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";

/** IPs that the pod's status fields report. */
export interface PodAddresses {
  /** The pod's IPs, primary first (from the provider). */
  podIps: string[];
  /** The node's IPs, primary first. */
  hostIps: string[];
}

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

const SUBSCRIPT = /^metadata\.(annotations|labels)\['(.*)'\]$/s;

/** Resolves one fieldRef; throws an `Error` with the kubelet's message for unsupported paths. */
export function resolveFieldRef(
  pod: Pod,
  ref: { apiVersion?: string; fieldPath: string },
  addresses: PodAddresses,
): string {
  const path = ref.fieldPath === "spec.host" ? "spec.nodeName" : ref.fieldPath;
  if (ref.apiVersion && ref.apiVersion !== "v1") {
    throw new Error(`unsupported pod version: ${ref.apiVersion}`);
  }
  const subscript = SUBSCRIPT.exec(path);
  if (subscript) {
    const map = subscript[1] === "labels" ? pod.metadata?.labels : pod.metadata?.annotations;
    return map?.[subscript[2]] ?? "";
  }
  if (!ALLOWED.has(path)) throw new Error(`field label not supported: ${ref.fieldPath}`);
  switch (path) {
    case "spec.nodeName":
      return pod.spec?.nodeName ?? "";
    case "spec.serviceAccountName":
      return pod.spec?.serviceAccountName ?? "";
    case "status.hostIP":
      if (addresses.hostIps.length === 0) throw new Error("node has no IP address");
      return addresses.hostIps[0];
    case "status.hostIPs":
      if (addresses.hostIps.length === 0) throw new Error("node has no IP address");
      return addresses.hostIps.join(",");
    case "status.podIP":
      return addresses.podIps[0] ?? "";
    case "status.podIPs":
      return addresses.podIps.join(",");
    case "metadata.name":
      return pod.metadata?.name ?? "";
    case "metadata.namespace":
      return pod.metadata?.namespace ?? "";
    case "metadata.uid":
      return pod.metadata?.uid ?? "";
    case "metadata.labels":
      return formatMap(pod.metadata?.labels ?? {});
    case "metadata.annotations":
      return formatMap(pod.metadata?.annotations ?? {});
  }
  // spec.restartPolicy, spec.schedulerName and status.phase pass the allow-list but, as in the
  // kubelet, have no runtime value.
  throw new Error(`unsupported fieldPath: ${path}`);
}

/** `key="value"` lines sorted by key, values quoted as Go's `%q` does (fieldpath.FormatMap). */
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

/** A string quoted like Go's `strconv.Quote`. */
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
