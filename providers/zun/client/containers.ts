/**
 * Single-container pods as plain Zun containers (../request/container.ts), the container half of
 * the zun backend (../backend.ts): list this node's containers by label, read each pod's current
 * one, make one per run, remove them.
 *
 * Only containers of the provider's own keystone user count (Zun records the creator as
 * `user_id`): another member of the project can write any label, and a container it labelled as
 * one of this node's pods would otherwise be adopted, and get that pod's exec and logs.
 *
 * A listing is Zun's database, which zun-compute brings in line with the engine once a minute
 * (`sync_container_state_interval`, 60 s by default): the poll reads each container that was
 * not yet seen ended once more on its own (`GET /v1/containers/<uuid>` asks the engine,
 * zun/api/controllers/v1/containers.py `get_one` → `container_show`), so an exit and its code
 * are seen within one interval, at one request per running pod and interval.
 *
 * A run that ended is kept when the kit lets go of it (for `kubectl logs --previous`); the runs
 * before it are deleted then, and all of them with the pod.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  InvalidInputError,
  isNotFound,
  type Logger,
  podKeyOf,
  type RemoteMakeOptions,
  type RemoteRead,
  type RemoteRun,
  TransientError,
} from "../../../provider/mod.ts";
import { LABELS } from "../request/capsule.ts";
import { CONTAINER_TAG, containerCreateBody } from "../request/container.ts";
import { runOfContainer, type ZunHandle, type ZunPlainContainer } from "../status.ts";
import { mapLimited } from "./_limit.ts";
import { type ZunApi, ZunApiError } from "./zun_api.ts";

/** What {@link ZunContainers} needs. */
export interface ZunContainersOptions {
  api: ZunApi;
  nodeName: string;
  log: Logger;
  exposePorts: boolean;
  secretEnv?: "env" | "refuse";
  /** How long a deletion waits for the container to be gone, ms. */
  deleteTimeoutMs: number;
  /** Between reads while waiting, ms. */
  pollMs?: number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  now: () => number;
}

/** Live reads of containers at once, at most. */
const READS_AT_ONCE = 8;

/** Statuses in which Zun is still making the container: a delete then races the create. */
const MAKING = new Set(["Creating", "Created"]);
/** Statuses after which a container with restart policy `no` changes no more. */
const ENDED = new Set(["Stopped", "Error", "Dead"]);

/** The run count a container's labels carry. */
const runOf = (c: ZunPlainContainer) => CONTAINER_TAG.read(c.labels ?? undefined)?.run ?? 0;

/** This node's plain containers on Zun; see the module doc. */
export class ZunContainers {
  readonly #o: ZunContainersOptions;
  /** The current container of each pod, by pod uid. */
  readonly #uuids = new Map<string, string>();

  constructor(options: ZunContainersOptions) {
    this.#o = options;
  }

  /** Every container of the provider's user, following `next` pages. */
  async all(signal?: AbortSignal): Promise<ZunPlainContainer[]> {
    const user = await this.#o.api.userId(signal);
    const found: ZunPlainContainer[] = [];
    let marker: string | undefined;
    for (;;) {
      const query = `?limit=1000${marker ? `&marker=${marker}` : ""}`;
      const { body } = await this.#o.api.call<
        { containers: ZunPlainContainer[]; next?: string | null }
      >("GET", `/containers/${query}`, { signal });
      found.push(...body.containers.filter((c) => !user || c.user_id === user));
      if (!body.next || body.containers.length === 0) return found;
      marker = body.containers[body.containers.length - 1].uuid;
    }
  }

  /** The pod's containers in `listed`, by run and then age (the last is current). */
  #ofPod(listed: ZunPlainContainer[], uid: string): ZunPlainContainer[] {
    return listed.filter((c) =>
      c.labels?.[LABELS.uid] === uid &&
      CONTAINER_TAG.read(c.labels)?.node === this.#o.nodeName
    ).sort((a, b) => runOf(a) - runOf(b));
  }

  /** This node's containers, for adoption. */
  async list(signal: AbortSignal): Promise<RemoteRun<ZunHandle>[]> {
    const now = this.#o.now();
    return (await this.all(signal))
      .filter((c) => CONTAINER_TAG.read(c.labels ?? undefined)?.node === this.#o.nodeName)
      .map((c) => runOfContainer(c, now))
      .filter((run) => run.pod !== undefined);
  }

  /** Each pod's current container: one listing, then a live read of those not seen ended. */
  async readMany(
    reads: RemoteRead<ZunHandle>[],
    signal: AbortSignal,
  ): Promise<(RemoteRun<ZunHandle> | undefined)[]> {
    const listed = await this.all(signal);
    return await mapLimited(reads, READS_AT_ONCE, async ({ pod }) => {
      const uid = pod.metadata?.uid ?? "";
      const mine = this.#ofPod(listed, uid);
      const known = this.#uuids.get(uid);
      const listedOne = mine.find((c) => c.uuid === known) ?? mine.at(-1);
      if (!listedOne) return undefined;
      this.#uuids.set(uid, listedOne.uuid);
      const current = ENDED.has(listedOne.status)
        ? listedOne
        : await this.#get(listedOne.uuid, signal);
      return current && runOfContainer(current, this.#o.now(), pod);
    });
  }

  /** One container read live, or undefined once Zun has none. */
  async #get(uuid: string, signal?: AbortSignal): Promise<ZunPlainContainer | undefined> {
    try {
      return (await this.#o.api.call<ZunPlainContainer>("GET", `/containers/${uuid}`, { signal }))
        .body;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** Runs the pod's container (`run`: the restarts before it). */
  async make(
    pod: Pod,
    signal?: AbortSignal,
    options?: RemoteMakeOptions,
  ): Promise<RemoteRun<ZunHandle>> {
    const body = containerCreateBody(pod, {
      nodeName: this.#o.nodeName,
      exposePorts: this.#o.exposePorts,
      secretEnv: this.#o.secretEnv,
      version: await this.#o.api.version(signal),
      run: options?.restarts ?? 0,
    });
    try {
      const { body: made } = await this.#o.api.call<ZunPlainContainer>(
        "POST",
        "/containers?run=true",
        { body, signal },
      );
      this.#uuids.set(pod.metadata!.uid!, made.uuid);
      return runOfContainer(made, this.#o.now(), pod);
    } catch (err) {
      if (err instanceof ZunApiError && err.status === 400) {
        throw new InvalidInputError(
          `Zun refused the container of ${podKeyOf(pod)}: ${err.message}`,
          { cause: err },
        );
      }
      if (err instanceof ZunApiError) {
        throw new TransientError(
          `creating the container of ${podKeyOf(pod)} failed: ${err.message}`,
          { cause: err },
        );
      }
      throw err;
    }
  }

  /** Deletes every container of the pod. */
  async remove(pod: Pod, signal?: AbortSignal): Promise<void> {
    const uid = pod.metadata?.uid ?? "";
    for (const c of this.#ofPod(await this.all(signal), uid)) {
      await this.#delete(pod, c.uuid, signal);
    }
    this.#uuids.delete(uid);
  }

  /**
   * Lets go of a run: an ended one is kept for `--previous` (the runs before it deleted), one
   * still running (a second run found on adoption) is deleted.
   */
  async discard(pod: Pod, run: RemoteRun<ZunHandle>, signal: AbortSignal): Promise<void> {
    const uid = pod.metadata?.uid ?? "";
    const kept = run.handle?.uuid;
    const ended = Object.values(run.containers).every((c) => "terminated" in c.state);
    for (const c of this.#ofPod(await this.all(signal), uid)) {
      const older = runOf(c) < (run.handle?.run ?? 0);
      if ((c.uuid === kept && !ended) || (c.uuid !== kept && older)) {
        await this.#delete(pod, c.uuid, signal);
      }
    }
    if (this.#uuids.get(uid) === kept) this.#uuids.delete(uid);
  }

  /** Deletes one container (stopping it first) once Zun has made it; waits until it is gone. */
  async #delete(pod: Pod, uuid: string, signal?: AbortSignal): Promise<void> {
    const deadline = this.#o.now() + this.#o.deleteTimeoutMs;
    let lastDeleteMs = -Infinity;
    for (;;) {
      const c = await this.#get(uuid, signal);
      if (!c) return;
      if (this.#o.now() > deadline) {
        throw new TransientError(
          `container ${uuid} of ${podKeyOf(pod)} is still ${c.status} after ${
            this.#o.deleteTimeoutMs / 1000
          } s: ${c.status_reason ?? "no reason given by Zun"}`,
        );
      }
      if (
        !MAKING.has(c.status) && c.status !== "Deleting" && this.#o.now() - lastDeleteMs > 15_000
      ) {
        lastDeleteMs = this.#o.now();
        // stop=true: Zun stops a running container (10 s) and deletes it (API 1.12).
        await this.#o.api.call("DELETE", `/containers/${uuid}?stop=true`, { signal })
          .catch((err) => {
            if (!isNotFound(err) && !(err instanceof ZunApiError && err.status === 409)) throw err;
          });
      }
      await this.#o.sleep(this.#o.pollMs ?? 500, signal);
    }
  }
}
