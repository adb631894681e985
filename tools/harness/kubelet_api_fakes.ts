/**
 * Fakes for the kubelet API unit tests: reviewers that record their calls, a mock provider on
 * a fake clock with a few pods, a minimal provider without optional capabilities, and request
 * environments that look like a TLS connection with a verified client certificate.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "../../base/log.ts";
import { VkubeletMetrics } from "../../core/metrics.ts";
import type { Provider } from "../../provider/mod.ts";
import type {
  AccessAttributes,
  AccessReviewer,
  KubeletApiDeps,
  TokenReviewer,
  UserInfo,
} from "../../core/kubelet_api/mod.ts";
import { createKubeletApp } from "../../core/kubelet_api/mod.ts";
import { createProvider, type MockProvider } from "../../providers/mock/mod.ts";
import { FakeClock } from "../../base/fake_clock.ts";

export const NODE = "vk-test";
export const log = getLogger(["vkubelet", "test", "kubelet_api"]);

/** Tokens it knows map to users; counts reviews. */
export class FakeTokenReviewer implements TokenReviewer {
  calls = 0;
  constructor(public users: Record<string, UserInfo> = {}) {}
  review(token: string) {
    this.calls++;
    const user = this.users[token];
    return Promise.resolve(
      user
        ? { authenticated: true as const, user }
        : { authenticated: false as const, error: "unknown token" },
    );
  }
}

/** Allows `verb subresource` pairs per username (`*` for any); records every review. */
export class FakeAccessReviewer implements AccessReviewer {
  reviews: Array<{ user: UserInfo; attributes: AccessAttributes }> = [];
  constructor(public rules: Record<string, string[]> = {}) {}
  review(user: UserInfo, attributes: AccessAttributes) {
    this.reviews.push({ user, attributes });
    const allowed = (this.rules[user.username] ?? []).some((rule) =>
      rule === "*" || rule === `${attributes.verb} ${attributes.subresource}` ||
      rule === `* ${attributes.subresource}`
    );
    return Promise.resolve({ allowed, reason: allowed ? "rule" : "no rule" });
  }
}

/** The env a verified client certificate gives a request. */
export function certEnv(cn: string, orgs: string[] = [], authorized = true) {
  return {
    incoming: {
      socket: {
        authorized,
        getPeerCertificate: () => ({ subject: { CN: cn, O: orgs.length === 1 ? orgs[0] : orgs } }),
      },
    },
  };
}

/** A pod bound to {@link NODE}. */
export function testPod(namespace: string, name: string, containers = ["app"]): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { namespace, name, uid: `uid-${name}` },
    spec: { nodeName: NODE, containers: containers.map((c) => ({ name: c, image: "busybox" })) },
  };
}

/** A provider with only the required methods. */
export function bareProvider(pods: Pod[] = []): Provider {
  return {
    createPod: () => Promise.resolve(),
    updatePod: () => Promise.resolve(),
    deletePod: () => Promise.resolve(),
    getPod: () => Promise.resolve(undefined),
    listPods: () => Promise.resolve(pods),
  };
}

/** Everything a test needs: app, mock provider with pods, reviewers, clock. */
export async function setup(options: Partial<KubeletApiDeps> & { pods?: Pod[] } = {}) {
  const clock = new FakeClock();
  const shutdown = new AbortController();
  const mock = createProvider({ followInterval: "1s" }, {
    nodeName: NODE,
    log,
    clock,
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal: shutdown.signal,
  }) as MockProvider;
  const pods = options.pods ?? [testPod("default", "web", ["app", "sidecar"])];
  for (const pod of pods) await mock.createPod(pod, {});
  const tokens = new FakeTokenReviewer({
    "good-token": { username: "alice", groups: ["devs"] },
  });
  const access = new FakeAccessReviewer({ "admin": ["*"], "alice": ["get stats"] });
  const metrics = new VkubeletMetrics();
  const deps: KubeletApiDeps = {
    provider: mock,
    nodeName: NODE,
    podCache: () => pods,
    log,
    clock,
    metrics,
    signal: shutdown.signal,
    ...options,
    auth: { tokenReviewer: tokens, accessReviewer: access, ...options.auth },
  };
  const app = createKubeletApp(deps);
  const admin = certEnv("admin", ["system:masters"]);
  return {
    app,
    deps,
    clock,
    mock,
    tokens,
    access,
    admin,
    metrics,
    /** GET as the admin (all allowed). */
    get: (path: string, init: RequestInit = {}) => app.request(path, init, admin),
    async [Symbol.asyncDispose]() {
      shutdown.abort();
      await mock.close();
    },
  };
}
