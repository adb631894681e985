/**
 * The env of a pod as B's kubelet reads it: the core resolved and expanded it already, so B's
 * second expansion must find nothing left to do, but the fieldRefs only B can resolve.
 * @module
 */
import type { EnvVar } from "kubernetes-types/core/v1.d.ts";

/**
 * The env as B's kubelet must read it. Values come resolved and expanded by the core; B's kubelet
 * expands `$(NAME)` and `$$` once more (third_party/forked/golang/expansion), so every `$` is
 * doubled — except in `$(NAME)` of an earlier var left as a fieldRef (`status.podIP` and the
 * like, in DEFERRED_FIELD_PATHS), which is B's to expand.
 */
export function escapedEnv(env: EnvVar[]): EnvVar[] {
  const deferred = new Set<string>();
  return env.map((v) => {
    if (v.value === undefined) {
      if (v.valueFrom?.fieldRef) deferred.add(v.name);
      return v;
    }
    deferred.delete(v.name);
    const value = v.value.replaceAll("$", "$$$$").replace(
      /\$\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g,
      (match, name) => deferred.has(name) ? match.slice(1) : match,
    );
    return { ...v, value };
  });
}

/** fieldRefs whose value only B knows: the core leaves them to B's kubelet. */
export const DEFERRED_FIELD_PATHS: readonly string[] = [
  "status.podIP",
  "status.podIPs",
  "status.hostIP",
  "status.hostIPs",
];
