/**
 * The floor's Zun backend: what a kubelet for Zun must ask of zun-api for one pod, and no more —
 * the capsule the provider would send (built by the same code) POSTed, a 5xx create retried,
 * the capsule listing read once per interval for every pod (as vkubelet's status loop does) until
 * the capsule is Running (one in Error deleted and made again, as the restart policy would); on
 * deletion a DELETE and the listing read until the capsule is gone.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { capsuleCreateBody, LABELS } from "../../providers/zun/request/capsule.ts";
import { loadCredentials } from "../../providers/zun/credentials.ts";
import type { ZunCapsule } from "../../providers/zun/status.ts";
import { ZunApi, ZunApiError } from "../../providers/zun/client/zun_api.ts";
import type { FloorBackend } from "./floor.ts";

/** Where the floor's Zun is. */
export interface ZunFloorConfig {
  /** The `OS_*` variables of the user the capsules belong to. */
  env: Record<string, string>;
  /** The node's name, the label the floor's capsules carry. */
  nodeName: string;
  /** How often the capsule listing is read, in ms. */
  intervalMs: number;
}

/** Runs tasks a few at a time (the floor's limiter). */
interface Limit {
  run(task: () => Promise<void>): Promise<void>;
}

/** A client of zun-api as the `OS_*` variables in `env` say (no clouds.yaml). */
export function zunApiOf(env: Record<string, string>): ZunApi {
  return new ZunApi({
    credentials: loadCredentials(undefined, {
      env: (n) => env[n],
      readFile: () => undefined,
      cwd: "/",
    }),
    serviceType: "container",
    requestTimeoutMs: 120_000,
  });
}

/** Every capsule labelled with `node`, in one listing. */
export async function capsulesOf(api: ZunApi, node: string): Promise<ZunCapsule[]> {
  const { body } = await api.call<{ capsules: ZunCapsule[] }>("GET", "/capsules/?limit=1000");
  return body.capsules.filter((c) => c.labels?.[LABELS.node] === node);
}

/**
 * POSTs a capsule, sending again after a 5xx (up to 5 times, a second apart) as the core retries
 * the provider; `send` wraps each POST (the floor kubelet's limiter), `onRetry` counts.
 */
export async function createCapsule(
  api: ZunApi,
  body: unknown,
  send: (post: () => Promise<void>) => Promise<void> = (post) => post(),
  onRetry: () => void = () => {},
): Promise<void> {
  for (let attempt = 0;; attempt++) {
    try {
      await send(() => api.call("POST", "/capsules", { body }).then(() => {}));
      return;
    } catch (err) {
      if (!(err instanceof ZunApiError) || err.status < 500 || attempt >= 5) throw err;
      onRetry();
      await new Promise((r) => setTimeout(r, 1_000));
    }
  }
}

/** The floor's zun-api calls for one pod; see the module doc. */
export function zunFloorBackend(floor: ZunFloorConfig, limit: Limit): FloorBackend {
  const api = zunApiOf(floor.env);
  const key = (pod: Pod) => `${pod.metadata?.namespace}/${pod.metadata?.name}`;
  const create = (pod: Pod) =>
    createCapsule(
      api,
      capsuleCreateBody(pod, { nodeName: floor.nodeName, exposePorts: false }),
      (post) => limit.run(post),
    );
  /** Waiters on a pod's capsule, settled by the one listing each interval. */
  const waiting = new Map<string, (capsule: ZunCapsule | undefined) => boolean>();
  let listing: Promise<void> | undefined;
  const poll = () => {
    listing ??= (async () => {
      while (waiting.size > 0) {
        await new Promise((r) => setTimeout(r, floor.intervalMs));
        const listed = await capsulesOf(api, floor.nodeName).catch(() => undefined);
        if (!listed) continue;
        const byPod = new Map(
          listed.map((c) => [`${c.labels?.[LABELS.namespace]}/${c.labels?.[LABELS.name]}`, c]),
        );
        for (const [pod, settled] of waiting) {
          if (settled(byPod.get(pod))) waiting.delete(pod);
        }
      }
      listing = undefined;
    })();
  };
  const until = (pod: Pod, settled: (capsule: ZunCapsule | undefined) => boolean) =>
    new Promise<void>((done) => {
      waiting.set(key(pod), (capsule) => settled(capsule) && (done(), true));
      poll();
    });
  const uuids = new Map<string, string>();
  return {
    async run(pod) {
      await create(pod);
      let failed: ZunCapsule | undefined;
      do {
        if (failed) {
          await limit.run(() => api.call("DELETE", `/capsules/${failed!.uuid}`).then(() => {}));
          await until(pod, (c) => c?.uuid !== failed!.uuid);
          await create(pod);
          failed = undefined;
        }
        await until(pod, (c) => {
          if (c?.status === "Error") failed = c;
          if (c) uuids.set(key(pod), c.uuid);
          return c?.status === "Running" || c?.status === "Error";
        });
      } while (failed);
    },
    async remove(pod) {
      const uuid = uuids.get(key(pod));
      if (uuid === undefined) return;
      await limit.run(() => api.call("DELETE", `/capsules/${uuid}`).then(() => {}));
      await until(pod, (c) => c === undefined);
      uuids.delete(key(pod));
    },
  };
}
