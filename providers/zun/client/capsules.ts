/**
 * Zun's capsules as the kit's {@link RemoteBackend}: list this node's capsules by label, read
 * one by uuid, make one, remove one. What only the real server showed (Zun 18.0.0):
 *
 * - a capsule deleted while it is still being made either leaks its container or goes to
 *   Error ("has dependent containers which must be removed before it"); so a deletion first
 *   waits for the capsule to leave Creating, then deletes, then waits until Zun answers 404,
 *   deleting again when the capsule fell to Error meanwhile, or when an accepted delete has not
 *   been acted on after 15 s;
 * - a create that fails after Zun wrote its row (a Neutron or catalog failure) leaves a capsule
 *   without a name in Creating, and one whose image failed stays in Error: a failed create
 *   deletes the capsules it left.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  InvalidInputError,
  isNotFound,
  type Logger,
  podKeyOf,
  type RemoteBackend,
  type RemoteRead,
  type RemoteRun,
  TransientError,
} from "../../../provider/mod.ts";
import { capsuleCreateBody, LABELS } from "../request/capsule.ts";
import { parseZunTime, runOfCapsule, type ZunCapsule } from "../status.ts";
import { type ZunApi, ZunApiError } from "./zun_api.ts";

/** What {@link ZunCapsules} needs. */
export interface ZunCapsulesOptions {
  api: ZunApi;
  nodeName: string;
  log: Logger;
  exposePorts: boolean;
  /** `refuse`: a pod with a Secret's value in its env fails (../request/capsule.ts). */
  secretEnv?: "env" | "refuse";
  /** How long a deletion waits for the capsule to be gone, ms. */
  deleteTimeoutMs: number;
  /** Between reads while waiting, ms. */
  pollMs?: number;
  /** Sleeps (the real clock's in production). */
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  now: () => number;
}

/**
 * A delete Zun accepted (204) but whose capsule is still there this long after is sent again:
 * zun-api casts the delete to zun-compute, and once in a run of the integration test under load
 * that cast was never acted on (the capsule stayed Running until a second delete).
 */
const REDELETE_MS = 15_000;

/** Statuses in which Zun is still making the capsule: deleting it then races the create. */
const MAKING = new Set(["Creating", "Created"]);

/** This node's capsules on Zun; see the module doc. */
export class ZunCapsules implements RemoteBackend {
  readonly #o: ZunCapsulesOptions;
  /** The capsule of each pod, by pod uid. */
  readonly #uuids = new Map<string, string>();
  /** Removals under way, by pod uid. */
  readonly #removing = new Map<string, Promise<void>>();
  /** The capsules with each pod's uid label in the status poll's last listing, by pod uid. */
  readonly #seen = new Map<string, string[]>();
  /** Pods whose create failed: Zun may hold a capsule of theirs the provider never learnt of. */
  readonly #doubtful = new Set<string>();
  /** The listing in flight. */
  #listing?: Promise<ZunCapsule[]>;
  /** The listing to start once that one ends, shared by the callers that came meanwhile. */
  #nextListing?: Promise<ZunCapsule[]>;

  constructor(options: ZunCapsulesOptions) {
    this.#o = options;
  }

  /**
   * Every capsule this project sees, following `next` pages; always a listing that began after
   * the call (one begun earlier may miss a capsule made since, which the status poll would read
   * as lost). Callers that come while a listing is in flight share the next one (zun-api builds
   * each capsule of a listing with its containers: a hundred deletions listing each on its own
   * kept its one worker busy). A caller whose signal aborts stops waiting; the listing itself is
   * bounded by the API's request timeout.
   */
  all(signal?: AbortSignal): Promise<ZunCapsule[]> {
    if (this.#listing && !this.#nextListing) {
      this.#nextListing = this.#listing.catch(() => {}).then(() => {
        this.#nextListing = undefined;
        return this.#startListing();
      });
    }
    const listing = this.#nextListing ?? this.#startListing();
    if (!signal) return listing;
    return new Promise((resolve, reject) => {
      const aborted = () => reject(signal.reason);
      if (signal.aborted) return aborted();
      signal.addEventListener("abort", aborted, { once: true });
      listing.then(resolve, reject).finally(() => signal.removeEventListener("abort", aborted));
    });
  }

  #startListing(): Promise<ZunCapsule[]> {
    const listing = this.#list().finally(() => {
      if (this.#listing === listing) this.#listing = undefined;
    });
    this.#listing = listing;
    return listing;
  }

  /**
   * Only the capsules of the provider's own keystone user: another member of the project can
   * write any label, and a capsule it labelled as this node's pod would be adopted as that pod.
   */
  async #list(): Promise<ZunCapsule[]> {
    const capsules: ZunCapsule[] = [];
    let marker: string | undefined;
    for (;;) {
      const query = `?limit=1000${marker ? `&marker=${marker}` : ""}`;
      const { body } = await this.#o.api.call<{ capsules: ZunCapsule[]; next?: string | null }>(
        "GET",
        `/capsules/${query}`,
      );
      capsules.push(...body.capsules);
      if (!body.next || body.capsules.length === 0) break;
      marker = body.capsules[body.capsules.length - 1].uuid;
    }
    const user = await this.#o.api.userId();
    return capsules.filter((c) => !user || c.user_id === user);
  }

  async list(signal: AbortSignal): Promise<RemoteRun[]> {
    const now = this.#o.now();
    const runs: RemoteRun[] = [];
    for (const capsule of await this.all(signal)) {
      if (capsule.labels?.[LABELS.node] !== this.#o.nodeName) continue;
      const run = runOfCapsule(capsule, now);
      if (!run.pod) continue;
      this.#uuids.set(capsule.labels[LABELS.uid], capsule.uuid);
      runs.push(run);
    }
    return runs;
  }

  async read(pod: Pod, signal?: AbortSignal): Promise<RemoteRun | undefined> {
    const capsule = await this.#capsuleOf(pod, signal);
    return capsule && runOfCapsule(capsule, this.#o.now(), pod);
  }

  /**
   * Every pod's capsule from one listing (which carries each capsule's containers, as a read of
   * one does: zun/api/controllers/v1/capsules.py formats both with `format_capsule`), so the
   * status poll costs zun-api one request an interval, not one a pod. A pod is found as
   * {@link read} finds it: by its capsule's uuid, else by its uid label.
   */
  async readMany(reads: RemoteRead[], signal: AbortSignal): Promise<(RemoteRun | undefined)[]> {
    const capsules = await this.all(signal);
    const byUuid = new Map(capsules.map((c) => [c.uuid, c]));
    const labelled = new Map<string, string[]>(); // pod uid → its capsules, oldest first
    for (const c of capsules) {
      const uid = c.labels?.[LABELS.uid];
      if (uid) labelled.set(uid, [...labelled.get(uid) ?? [], c.uuid]);
    }
    const now = this.#o.now();
    return reads.map(({ pod }) => {
      const uid = pod.metadata?.uid ?? "";
      const mine = labelled.get(uid) ?? [];
      this.#seen.set(uid, mine);
      const known = this.#uuids.get(uid);
      const capsule = byUuid.get(known ?? mine.at(-1) ?? ""); // the listing is oldest first
      if (!capsule) {
        if (known) this.#uuids.delete(uid);
        return undefined;
      }
      this.#uuids.set(uid, capsule.uuid);
      return runOfCapsule(capsule, now, pod);
    });
  }

  async make(pod: Pod, signal?: AbortSignal): Promise<void> {
    const body = capsuleCreateBody(pod, {
      nodeName: this.#o.nodeName,
      exposePorts: this.#o.exposePorts,
      secretEnv: this.#o.secretEnv,
    });
    await this.#removing.get(pod.metadata?.uid ?? "");
    const startedMs = this.#o.now();
    try {
      const { body: made } = await this.#o.api.call<ZunCapsule>("POST", "/capsules", {
        body,
        signal,
      });
      this.#uuids.set(pod.metadata!.uid!, made.uuid);
    } catch (err) {
      this.#doubtful.add(pod.metadata!.uid!);
      if (signal?.aborted) throw err;
      await this.#cleanUpFailedCreate(pod, startedMs).catch((cleanup) =>
        this.#o.log.warning("cannot clean up after the failed create of {pod}: {err}", {
          pod: podKeyOf(pod),
          err: cleanup,
        })
      );
      throw classify(err, pod);
    }
  }

  /**
   * Deletes the pod's capsules that exist now; a make for the same pod waits for it (the kit
   * removes an ended run and makes the next without waiting in between).
   */
  remove(pod: Pod, signal?: AbortSignal): Promise<void> {
    const uid = pod.metadata?.uid ?? "";
    const removal = this.#targets(pod, signal).then(async (uuids) => {
      for (const uuid of uuids) await this.#deleteCapsule(pod, uuid, signal);
      if (uuids.includes(this.#uuids.get(uid) ?? "")) this.#uuids.delete(uid);
      this.#seen.delete(uid);
      this.#doubtful.delete(uid);
    });
    const tracked = removal.catch(() => {}).finally(() => {
      if (this.#removing.get(uid) === tracked) this.#removing.delete(uid);
    });
    this.#removing.set(uid, tracked);
    return removal;
  }

  /** The pod's capsules: the one it was made as, and any other with its uid label. */
  async #targets(pod: Pod, signal?: AbortSignal): Promise<string[]> {
    const uid = pod.metadata?.uid ?? "";
    const known = this.#uuids.get(uid);
    // Every capsule the provider makes is known by its uuid unless its create failed, so the
    // poll's last listing tells the rest; after a failed create, or before any poll saw the pod,
    // a listing of its own (zun-api takes about a second to list a hundred capsules: a hundred
    // deletions listing each kept it busy).
    const seen = this.#seen.get(uid);
    const labelled = known && seen && !this.#doubtful.has(uid)
      ? seen
      : (await this.all(signal)).filter((c) => c.labels?.[LABELS.uid] === uid).map((c) => c.uuid);
    return [...new Set([...(known ? [known] : []), ...labelled])];
  }

  /**
   * Deletes one capsule and waits until Zun answers 404: the first delete once Zun has made it
   * (a delete during the create races it), a repeat when it fell to Error.
   */
  async #deleteCapsule(pod: Pod, uuid: string, signal?: AbortSignal): Promise<void> {
    const deadline = this.#o.now() + this.#o.deleteTimeoutMs;
    let deletes = 0;
    let lastDeleteMs = 0;
    for (;;) {
      const capsule = await this.#o.api.call<ZunCapsule>("GET", `/capsules/${uuid}`, { signal })
        .then((a) => a.body, (err) => {
          if (isNotFound(err)) return undefined;
          throw err;
        });
      if (!capsule) return;
      if (this.#o.now() > deadline) {
        throw new TransientError(
          `capsule ${uuid} of ${podKeyOf(pod)} is still ${capsule.status} after ${
            this.#o.deleteTimeoutMs / 1000
          } s and ${deletes} deletes: ${capsule.status_reason ?? "no reason given by Zun"}`,
        );
      }
      const now = this.#o.now();
      const due = deletes === 0
        ? !MAKING.has(capsule.status)
        : now - lastDeleteMs >= (capsule.status === "Error" ? 2_000 : REDELETE_MS);
      if (due) {
        deletes++;
        lastDeleteMs = now;
        await this.#o.api.call("DELETE", `/capsules/${uuid}`, { signal }).catch((err) => {
          if (!isNotFound(err) && !(err instanceof ZunApiError && err.status === 409)) throw err;
        });
      }
      await this.#o.sleep(this.#o.pollMs ?? 500, signal);
    }
  }

  /** The pod's capsule now: by its known uuid, else by its uid label; undefined once gone. */
  async #capsuleOf(pod: Pod, signal?: AbortSignal): Promise<ZunCapsule | undefined> {
    const uid = pod.metadata?.uid ?? "";
    let uuid = this.#uuids.get(uid);
    if (!uuid) {
      const labelled = (await this.all(signal)).filter((c) => c.labels?.[LABELS.uid] === uid);
      uuid = labelled.at(-1)?.uuid;
      if (!uuid) return undefined;
      this.#uuids.set(uid, uuid);
    }
    try {
      return (await this.#o.api.call<ZunCapsule>("GET", `/capsules/${uuid}`, { signal })).body;
    } catch (err) {
      if (!isNotFound(err)) throw err;
      this.#uuids.delete(uid);
      return undefined;
    }
  }

  /**
   * After a failed create: the pod's own capsule if Zun kept one (its image failed), and the
   * nameless capsules in Creating that Zun wrote before it failed to reach Neutron (the name and
   * labels are written after that call, zun/api/controllers/v1/capsules.py `_do_post`) since
   * this create began.
   */
  async #cleanUpFailedCreate(pod: Pod, startedMs: number): Promise<void> {
    const uid = pod.metadata?.uid ?? "";
    const since = (c: ZunCapsule) => (parseZunTime(c.created_at) ?? 0) >= startedMs - 2_000;
    const left = (await this.all()).filter((c) =>
      since(c) &&
      (c.labels?.[LABELS.uid] === uid || (c.name === null && c.status === "Creating"))
    );
    for (const capsule of left) {
      this.#o.log.info("deleting capsule {uuid} left by a failed create of {pod}", {
        uuid: capsule.uuid,
        pod: podKeyOf(pod),
      });
      await this.#o.api.call("DELETE", `/capsules/${capsule.uuid}`).catch((err) => {
        if (!isNotFound(err)) throw err;
      });
    }
    this.#uuids.delete(uid);
  }
}

/** Zun's 400 is the pod's fault and never retried; anything else may pass. */
function classify(err: unknown, pod: Pod): unknown {
  if (err instanceof ZunApiError && err.status === 400) {
    return new InvalidInputError(`Zun refused the capsule of ${podKeyOf(pod)}: ${err.message}`, {
      cause: err,
    });
  }
  if (err instanceof ZunApiError) {
    return new TransientError(`creating the capsule of ${podKeyOf(pod)} failed: ${err.message}`, {
      cause: err,
    });
  }
  return err;
}
