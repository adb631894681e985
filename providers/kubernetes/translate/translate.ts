/**
 * Turns a pod of cluster A (bound to the virtual node, env already resolved by the core) into
 * the pod that runs in cluster B, and lists what it needs copied there first.
 *
 * What changes, and why:
 * - metadata: B's namespace, `<ns>.<name>`, the upstream labels plus the marks of `names.ts`;
 *   no owner references, finalizers or uid (they mean nothing in B);
 * - scheduling meant for the virtual node goes (nodeName, nodeSelector, node affinity, the
 *   virtual-kubelet toleration and the defaults A's admission added); the config's
 *   nodeSelector and tolerations come in, and the B-side constraints of the annotations
 *   `vkubelet.io/downstream-node-selector` and `vkubelet.io/downstream-affinity` (JSON), as
 *   tensile-kube does; priority and schedulerName are left to B;
 * - ConfigMaps, Secrets and image pull secrets are renamed to their copies;
 * - PersistentVolumeClaims need a mapping in the config, else the pod is refused; with
 *   `persistentVolumeClaims: copy` they point at copies in B named by Placement (`../copies/claims.ts`);
 * - the service-account token: with `downstream`, A's generated `kube-api-access-*` volume goes
 *   and B mounts its own default account's; with `upstream`, its token source becomes a Secret
 *   of B that the provider fills with a TokenRequest of A (see `../copies/tokens.ts`), and with
 *   `upstreamApiServer` the `kubernetes` Service variables name A's apiserver (`./apiserver_env.ts`);
 * - `enableServiceLinks` is off: the core already put A's service variables in the env;
 * - env stays as the core resolved it, with `$` escaped for B's second expansion; the pod and
 *   host IP fieldRefs are left for B's kubelet (B assigns the IP), see {@link escapedEnv}.
 * - with `profile: cci`, the result is shaped to CCI's rules (`../cci/cci_profile.ts`).
 * @module
 */
import type { Container, Pod, PodSpec, Toleration, Volume } from "kubernetes-types/core/v1.d.ts";
import type { ObjectMeta } from "kubernetes-types/meta/v1.d.ts";
import { InvalidInputError } from "../../../provider/mod.ts";
import { shapePodForCci } from "../cci/cci_profile.ts";
import type { KubernetesConfig } from "../config.ts";
import { markLabels, MARKS } from "../names.ts";
import { Placement } from "../placement.ts";
import { isServiceLinkOf } from "../copies/services.ts";
import { aimedAtB } from "./aim.ts";
import { escapedEnv } from "./env_for_b.ts";
import { translateVolumes, type VolumeContext } from "./volumes.ts";

export { DEFERRED_FIELD_PATHS, escapedEnv } from "./env_for_b.ts";
import { apiServerAddress, withApiServerEnv } from "./apiserver_env.ts";

/** An object of A a downstream pod refers to. */
export interface Dependency {
  kind: "configMaps" | "secrets";
  /** Namespace in A (the pod's). */
  namespace: string;
  /** Name in A. */
  name: string;
}

/** One service-account token the downstream pod needs (upstream mode). */
export interface TokenNeed {
  /** Key in the token Secret. */
  key: string;
  audience?: string;
  expirationSeconds?: number;
}

/** The translated pod and what must exist in B before it is created. */
export interface Translation {
  pod: Pod;
  dependencies: Dependency[];
  /** Upstream mode: the Secret of B carrying A's tokens and the pod's namespace. */
  tokenSecret?: { name: string; needs: TokenNeed[] };
  /** What the config's `profile` changed, one line each (for an event on the upstream pod). */
  shaped?: string[];
  /** `persistentVolumeClaims: copy`: the pod's claims (names in A) to copy to B first. */
  claims: string[];
}

/** What translation needs besides the pod. */
export interface TranslateOptions {
  config:
    & Pick<
      KubernetesConfig,
      | "namespace"
      | "nodeSelector"
      | "tolerations"
      | "serviceAccountToken"
      | "persistentVolumeClaims"
      | "profile"
    >
    & Partial<Pick<KubernetesConfig, "upstreamApiServer" | "namespaces">>;
  nodeName: string;
  /** Where objects go in B; by default from `config` (`namespaces`, `namespace`). */
  placement?: Pick<Placement, "namespaceOf" | "nameOf">;
  /**
   * With `syncServices`: the names of the pod namespace's Services, copied to B. Their
   * service-link variables leave the env and B's kubelet sets them from the copies.
   */
  services?: string[];
}

const DROPPED_ANNOTATIONS = new Set(["kubectl.kubernetes.io/last-applied-configuration"]);
const ADMISSION_TOLERATIONS = new Set([
  "node.kubernetes.io/not-ready",
  "node.kubernetes.io/unreachable",
]);

/** Fields of a pod's spec that are A's business (the virtual node's) or B's to set. */
const SPEC_FIELDS_LEFT_OUT = [
  "nodeName",
  "schedulerName",
  "priority",
  "priorityClassName",
  "preemptionPolicy",
  "overhead",
  "serviceAccountName",
  "serviceAccount",
  "ephemeralContainers", // added through a subresource, never at create
] as const;

/** Translates `pod` (not changed) for cluster B; throws InvalidInputError if it cannot run there. */
export function translatePod(pod: Pod, options: TranslateOptions): Translation {
  const { namespace, name, uid } = pod.metadata ?? {};
  if (!namespace || !name || !uid) throw new InvalidInputError("pod has no namespace, name or uid");
  const source = structuredClone(pod.spec ?? { containers: [] }) as PodSpec;
  const place = options.placement ?? new Placement(options.config, options.nodeName);
  const deps = new Map<string, Dependency>();
  const need = (kind: Dependency["kind"], ref: string) => {
    deps.set(`${kind}/${ref}`, { kind, namespace, name: ref });
    return place.nameOf(namespace, ref);
  };
  // First: a malformed annotation is reported before any volume's problem.
  const aim = aimedAtB(pod.metadata?.annotations ?? {});
  const tokenSecretName = place.nameOf(namespace, `${name}.token`);
  const ctx: VolumeContext = {
    namespace,
    options,
    need,
    tokens: [],
    tokenSecretName,
    claims: [],
    place,
  };
  const { volumes, dropped } = translateVolumes(source.volumes ?? [], ctx);
  const spec = specForB(pod, source, { ...ctx, aim, volumes, dropped });
  const downstream: Pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: metadataForB(pod, place, options.nodeName),
    spec: dropUndefined(spec),
  };
  return {
    pod: downstream,
    dependencies: [...deps.values()],
    tokenSecret: ctx.tokens.length > 0 ? { name: tokenSecretName, needs: ctx.tokens } : undefined,
    shaped: options.config.profile === "cci" ? shapePodForCci(downstream) : undefined,
    claims: ctx.claims,
  };
}

/** The pod's name, namespace, labels (with the marks) and annotations in B. */
function metadataForB(
  pod: Pod,
  place: Pick<Placement, "namespaceOf" | "nameOf">,
  nodeName: string,
): ObjectMeta {
  const { namespace, name, uid } = pod.metadata as { namespace: string; name: string; uid: string };
  return {
    name: place.nameOf(namespace, name),
    namespace: place.namespaceOf(namespace),
    labels: { ...pod.metadata?.labels, ...markLabels(nodeName, namespace, uid) },
    annotations: {
      ...Object.fromEntries(
        Object.entries(pod.metadata?.annotations ?? {}).filter(([k]) =>
          !DROPPED_ANNOTATIONS.has(k)
        ),
      ),
      [MARKS.name]: name,
    },
  };
}

/** The spec that runs in B: scheduling aimed at B, containers' env and mounts for B. */
function specForB(
  pod: Pod,
  source: PodSpec,
  ctx: VolumeContext & {
    aim: ReturnType<typeof aimedAtB>;
    volumes: Volume[];
    dropped: Set<string>;
  },
): PodSpec {
  const { options, need, aim, volumes, dropped } = ctx;
  const name = pod.metadata!.name!;
  // The config's selector keeps the pod on the selected nodes; the annotation narrows it.
  const selector = { ...aim.nodeSelector, ...options.config.nodeSelector };
  const affinity = dropUndefined({
    ...source.affinity,
    nodeAffinity: undefined, // meant for the virtual node
    ...aim.affinity,
  });
  const isLink = options.services ? isServiceLinkOf(options.services) : () => false;
  const { serviceAccountToken, upstreamApiServer } = options.config;
  const apiServer = serviceAccountToken === "upstream" && upstreamApiServer
    ? apiServerAddress(upstreamApiServer)
    : undefined;
  const spec: PodSpec = {
    ...source,
    volumes: volumes.length > 0 ? volumes : undefined,
    containers: source.containers.map((c) => forB(c, dropped, apiServer, isLink)),
    initContainers: source.initContainers?.map((c) => forB(c, dropped, apiServer, isLink)),
    imagePullSecrets: source.imagePullSecrets?.map((s) => ({
      name: s.name ? need("secrets", s.name) : s.name,
    })),
    nodeSelector: Object.keys(selector).length > 0 ? selector : undefined,
    tolerations: translateTolerations(source.tolerations, options.config.tolerations),
    affinity: affinity && Object.keys(affinity).length > 0 ? affinity : undefined,
    enableServiceLinks: options.services ? (source.enableServiceLinks ?? true) : false,
    hostname: source.hostname ??
      (/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(name) ? name : undefined),
  };
  for (const field of SPEC_FIELDS_LEFT_OUT) delete spec[field];
  if (serviceAccountToken === "upstream") spec.automountServiceAccountToken = false;
  return spec;
}

/** The container without the dropped volumes' mounts, its env ready for B's kubelet. */
function forB(
  original: Container,
  dropped: Set<string>,
  apiServer: { host: string; port: string } | undefined,
  isLink: (name: string) => boolean,
): Container {
  const container = apiServer ? withApiServerEnv(original, apiServer) : original;
  const env = container.env ? escapedEnv(container.env.filter((v) => !isLink(v.name))) : undefined;
  if (dropped.size === 0 || !container.volumeMounts) return { ...container, env };
  return {
    ...container,
    env,
    volumeMounts: container.volumeMounts.filter((m) => !dropped.has(m.name)),
  };
}

function translateTolerations(
  tolerations: Toleration[] | undefined,
  extra: Toleration[],
): Toleration[] | undefined {
  const kept = (tolerations ?? []).filter((t) =>
    !t.key?.startsWith("virtual-kubelet.io/") &&
    !(t.key && ADMISSION_TOLERATIONS.has(t.key) && t.tolerationSeconds === 300)
  );
  const all = [...kept, ...extra.map((t) => ({ ...t }))];
  return all.length > 0 ? all : undefined;
}

function dropUndefined<T extends object>(object: T): T {
  for (const [key, value] of Object.entries(object)) {
    if (value === undefined) delete (object as Record<string, unknown>)[key];
  }
  return object;
}
