/**
 * imagePullSecrets → ECI `ImageRegistryCredential`s: each `kubernetes.io/dockerconfigjson` (or
 * legacy `dockercfg`) Secret's registries, with user name and password (or its `auth`, decoded).
 * A missing Secret is skipped, as the kubelet skips it (pkg/kubelet/kubelet_pods.go
 * `getPullSecretsForPod` logs and goes on).
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { isKubeNotFound, type ProviderKubeClient } from "../../../provider/mod.ts";
import type { RegistryCredential } from "./container_group.ts";

type Auths = Record<string, { username?: string; password?: string; auth?: string }>;

/** The pod's registry logins; none without a Kubernetes client. */
export async function registryCredentials(
  pod: Pod,
  kube: Pick<ProviderKubeClient, "secrets"> | undefined,
  signal?: AbortSignal,
): Promise<RegistryCredential[]> {
  const out: RegistryCredential[] = [];
  const ns = pod.metadata?.namespace ?? "default";
  for (const ref of pod.spec?.imagePullSecrets ?? []) {
    if (!kube || !ref.name) continue;
    const secret = await kube.secrets.get(ns, ref.name, { signal }).catch((err) => {
      if (isKubeNotFound(err)) return undefined;
      throw err;
    });
    const raw = secret?.data?.[".dockerconfigjson"] ?? secret?.data?.[".dockercfg"];
    if (!raw) continue;
    const parsed = JSON.parse(atob(raw)) as { auths?: Auths } & Auths;
    const auths: Auths = parsed.auths ?? (parsed as Auths);
    for (const [server, entry] of Object.entries(auths)) {
      let { username = "", password = "" } = entry;
      if (entry.auth && !username) [username, password] = atob(entry.auth).split(/:(.*)/s);
      out.push({
        server: server.replace(/^https?:\/\//, "").replace(/\/.*$/, ""),
        userName: username,
        password,
      });
    }
  }
  return out;
}
