/**
 * A pod's volumes as B mounts them: ConfigMaps and Secrets under their copies' names (each a
 * {@link Dependency}), claims mapped or copied, A's service-account tokens and namespace from the
 * token Secret (upstream mode), or B's own token volume in place of A's (downstream mode).
 * @module
 */
import type { Volume, VolumeProjection } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError } from "../../../provider/mod.ts";
import type { Placement } from "../placement.ts";
import type { Dependency, TokenNeed, TranslateOptions } from "./translate.ts";

/** What translating a volume needs, and collects (the token needs, the claims to copy). */
export interface VolumeContext {
  namespace: string;
  options: TranslateOptions;
  need: (kind: Dependency["kind"], name: string) => string;
  tokens: TokenNeed[];
  tokenSecretName: string;
  claims: string[];
  place: Pick<Placement, "nameOf">;
}

/** The volume as B should see it, or `undefined` to drop it (with its mounts). */
function translateVolume(volume: Volume, ctx: VolumeContext): Volume | undefined {
  const { options, need } = ctx;
  if (volume.configMap?.name) {
    return {
      ...volume,
      configMap: { ...volume.configMap, name: need("configMaps", volume.configMap.name) },
    };
  }
  if (volume.secret?.secretName) {
    return {
      ...volume,
      secret: { ...volume.secret, secretName: need("secrets", volume.secret.secretName) },
    };
  }
  if (volume.persistentVolumeClaim) {
    const claim = volume.persistentVolumeClaim.claimName;
    if (options.config.persistentVolumeClaims === "copy") {
      ctx.claims.push(claim);
      const claimName = ctx.place.nameOf(ctx.namespace, claim);
      return { ...volume, persistentVolumeClaim: { ...volume.persistentVolumeClaim, claimName } };
    }
    const key = `${ctx.namespace}/${claim}`;
    const mapped = options.config.persistentVolumeClaims[key];
    if (!mapped) {
      throw new InvalidInputError(
        `volume ${volume.name}: PersistentVolumeClaim ${key} is not supported by the kubernetes provider ` +
          `unless mapped to a claim of the downstream cluster (persistentVolumeClaims["${key}"] in the provider config)`,
      );
    }
    return {
      ...volume,
      persistentVolumeClaim: { ...volume.persistentVolumeClaim, claimName: mapped },
    };
  }
  if (!volume.projected) return volume;
  const sources = volume.projected.sources ?? [];
  const hasToken = sources.some((s) => s.serviceAccountToken);
  if (hasToken && options.config.serviceAccountToken === "downstream") {
    // A's generated token volume: B's admission mounts its own in its place.
    if (volume.name.startsWith("kube-api-access-")) return undefined;
    return volume; // a token the user asked for, with an audience: B issues it for B's account
  }
  const projected: VolumeProjection[] = sources.flatMap((s) => projectedSource(s, ctx));
  return { ...volume, projected: { ...volume.projected, sources: projected } };
}

function projectedSource(source: VolumeProjection, ctx: VolumeContext): VolumeProjection[] {
  if (source.configMap?.name) {
    const name = ctx.need("configMaps", source.configMap.name);
    return [{ ...source, configMap: { ...source.configMap, name } }];
  }
  if (source.secret?.name) {
    const name = ctx.need("secrets", source.secret.name);
    return [{ ...source, secret: { ...source.secret, name } }];
  }
  if (source.serviceAccountToken) {
    const key = `token-${ctx.tokens.filter((t) => t.key.startsWith("token-")).length}`;
    const { audience, expirationSeconds, path } = source.serviceAccountToken;
    ctx.tokens.push({ key, audience, expirationSeconds });
    return [{ secret: { name: ctx.tokenSecretName, items: [{ key, path }] } }];
  }
  const items = source.downwardAPI?.items ?? [];
  const isNamespace = (i: { fieldRef?: { fieldPath?: string } }) =>
    i.fieldRef?.fieldPath === "metadata.namespace";
  if (items.some(isNamespace)) {
    // In B the field would say B's namespace; the token Secret carries A's.
    if (!ctx.tokens.some((t) => t.key === "namespace")) ctx.tokens.push({ key: "namespace" });
    const fromSecret: VolumeProjection = {
      secret: {
        name: ctx.tokenSecretName,
        items: items.filter(isNamespace).map((i) => ({ key: "namespace", path: i.path })),
      },
    };
    const rest = items.filter((i) => !isNamespace(i));
    if (rest.length === 0) return [fromSecret];
    return [{ downwardAPI: { ...source.downwardAPI, items: rest } }, fromSecret];
  }
  return [source];
}

/** The pod's volumes as B mounts them, and the names of those dropped (their mounts go too). */
export function translateVolumes(source: Volume[], ctx: VolumeContext) {
  const volumes: Volume[] = [];
  const dropped = new Set<string>();
  for (const volume of source) {
    const next = translateVolume(volume, ctx);
    if (next) volumes.push(next);
    else dropped.add(volume.name);
  }
  return { volumes, dropped };
}
