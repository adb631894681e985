/**
 * Remote pods' logs mirrored into the node's pod log directory (./pod_log_dir.ts), so that a log
 * agent on the vkubelet host sees them as a node's: for each container instance the pods' status
 * reports (`containerStatuses[].restartCount`), a follower reads the provider's own log stream
 * (`getContainerLogs` with `follow`, `timestamps` and `sinceTime`) and appends every line once,
 * in order, with the backend's time, to `<restartCount>.log`:
 *
 * - a container's restart starts `<n+1>.log`; `<n>.log` is read to its end first (`previous`),
 *   also when no status showed instance n running (it ran and ended between two status pushes,
 *   or while vkubelet was away);
 * - vkubelet's restart resumes after the last record written: the stream is asked from that
 *   record's time, and the records at that time already written are skipped (by count);
 * - a stream that fails or ends while the container runs (a backend outage) is asked again after
 *   {@link LogMirrorOptions.retryMs}, from where the file ends, so the gap is caught up;
 * - at most `maxStreams` streams are followed at once; while others wait, each holds its turn for
 *   {@link LogMirrorOptions.turnMs} and then queues again (it resumes where it stopped);
 * - a line older than the last one written is dropped (a backend's follow that gives lines again);
 * - a line without a parseable time is stamped with vkubelet's clock (no resume dedupe for it);
 *   a line cut off by the end of a stream is left for the next read, which gives it whole.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { Clock } from "../base/clock.ts";
import type { ContainerLogOptions, ContainerRef } from "./contract.ts";
import { CriLineSplitter, normalizeLogTime } from "./cri_log.ts";
import { isNotFound, isNotSupported } from "./errors.ts";
import type { ContainerLog, ResumePoint } from "./container_log.ts";
import { formatLogTime } from "./log_stream.ts";
import type { Logger } from "./logger.ts";
import type { PodLogDir } from "./pod_log_dir.ts";

/** What {@link LogMirror} needs. */
export interface LogMirrorOptions {
  /** Where the logs go; its `maxStreams` bounds the streams followed (default 200). */
  dir: PodLogDir;
  /** The provider's log stream of a container (its `getContainerLogs`). */
  logs: (ref: ContainerRef, options: ContainerLogOptions) => Promise<ReadableStream<Uint8Array>>;
  /** Retries and turns go by it. */
  clock: Clock;
  /** Where failures are logged. */
  log: Logger;
  /** Wait before asking a failed or ended stream again, ms; default 5 s. */
  retryMs?: number;
  /** How long a stream is followed while others wait for a slot, ms; default 30 s. */
  turnMs?: number;
}

interface ContainerState {
  restartCount: number;
  running: boolean;
  containerId?: string;
}

interface Follower {
  done: Promise<void>;
  stop: AbortController;
}

/** Follows remote containers' logs into the pod log directory; see the module doc. */
export class LogMirror {
  readonly #o: LogMirrorOptions;
  /** The latest state of each container, by `uid/container`. */
  readonly #states = new Map<string, ContainerState>();
  /** Followers by `uid/container/restartCount`. */
  readonly #followers = new Map<string, Follower>();
  readonly #holders = new Map<AbortController, number>();
  readonly #waiting: (() => void)[] = [];
  /** Slots freed for a waiter that has not taken them yet. */
  #handedOver = 0;
  readonly #closed = new AbortController();

  /** Nothing followed until {@link observe} reports pods. */
  constructor(options: LogMirrorOptions) {
    this.#o = options;
  }

  /** A pod's status as pushed: followers start for its containers' current instances. */
  observe(pod: Pod): void {
    if (this.#closed.signal.aborted) return;
    const { namespace = "", name = "", uid = "" } = pod.metadata ?? {};
    for (const status of pod.status?.containerStatuses ?? []) {
      const state: ContainerState = {
        restartCount: status.restartCount ?? 0,
        running: status.state?.running !== undefined,
        containerId: status.containerID,
      };
      this.#states.set(`${uid}/${status.name}`, state);
      const target = { namespace, pod: name, uid, container: status.name };
      // The instance before, if no follower has read it: it ran and ended between two status
      // pushes, or while vkubelet was away. Read to its end (`previous`) from where its file
      // ends, so nothing is written twice.
      if (state.restartCount > 0) this.#start(target, state.restartCount - 1);
      if (status.state?.running || status.state?.terminated) {
        this.#start(target, state.restartCount, state.containerId);
      }
    }
  }

  #start(
    target: Omit<ContainerRef, "pod"> & { pod: string; uid: string },
    restartCount: number,
    containerId?: string,
  ): void {
    const key = `${target.uid}/${target.container}/${restartCount}`;
    if (this.#followers.has(key)) return;
    const stop = new AbortController();
    const done = this.#follow(target, restartCount, containerId, stop.signal)
      .catch((err) =>
        this.#o.log.warn("{pod}: mirroring the log of {container} stopped: {err}", {
          pod: `${target.namespace}/${target.pod}`,
          container: target.container,
          err,
        })
      );
    this.#followers.set(key, { done, stop });
  }

  /** The pod is gone: its followers stop and its log directory is removed. */
  async forget(pod: Pod): Promise<void> {
    const { namespace = "", name = "", uid = "" } = pod.metadata ?? {};
    const mine = [...this.#followers].filter(([key]) => key.startsWith(`${uid}/`));
    for (const [, f] of mine) f.stop.abort();
    await Promise.all(mine.map(([, f]) => f.done));
    for (const [key] of mine) this.#followers.delete(key);
    for (const key of [...this.#states.keys()]) {
      if (key.startsWith(`${uid}/`)) this.#states.delete(key);
    }
    await this.#o.dir.removePod({ namespace, pod: name, uid });
  }

  /** Stops every follower and waits for them (the files stay). */
  async close(): Promise<void> {
    this.#closed.abort();
    for (const f of this.#followers.values()) f.stop.abort();
    await Promise.all([...this.#followers.values()].map((f) => f.done));
  }

  async #follow(
    target: Omit<ContainerRef, "pod"> & { pod: string; uid: string },
    restartCount: number,
    containerId: string | undefined,
    stop: AbortSignal,
  ): Promise<void> {
    const signal = AbortSignal.any([stop, this.#closed.signal]);
    const stateKey = `${target.uid}/${target.container}`;
    const log = await this.#o.dir.open({ ...target, restartCount, containerId });
    try {
      while (!signal.aborted) {
        const state = this.#states.get(stateKey);
        const restarted = (state?.restartCount ?? restartCount) > restartCount;
        const ended = restarted || !state?.running;
        const ok = await this.#readOnce(
          target,
          log,
          { follow: !ended, previous: restarted },
          signal,
        );
        // A finished instance is read once to its end; a live one is followed again.
        if (ok === "unsupported" || (ended && ok)) return;
        await this.#o.clock.sleep(this.#o.retryMs ?? 5_000, signal).catch(() => {});
      }
    } finally {
      await log.close();
    }
  }

  /** One stream from where the file ends; false if it failed. */
  async #readOnce(
    ref: ContainerRef,
    log: ContainerLog,
    how: { follow: boolean; previous: boolean },
    signal: AbortSignal,
  ): Promise<boolean | "unsupported"> {
    const turn = new AbortController();
    await this.#acquire(turn, signal);
    try {
      const resume = log.resumePoint();
      const read = AbortSignal.any([signal, turn.signal]);
      const stream = await this.#o.logs(ref, {
        follow: how.follow,
        previous: how.previous || undefined,
        timestamps: true,
        sinceTime: resume ? new Date(Date.parse(resume.time)) : undefined,
        signal: read,
      });
      await this.#copy(stream, log, resume, read);
      return true;
    } catch (err) {
      if (!signal.aborted && !turn.signal.aborted) {
        this.#o.log.debug("{pod}: log of {container} unavailable, again later: {err}", {
          pod: `${ref.namespace}/${ref.pod}`,
          container: ref.container,
          err,
        });
      }
      // An instance before with no log to give (a backend that keeps none) is done with.
      if (how.previous && isNotFound(err)) return true;
      // A container whose logs the provider cannot serve at all: its file says nothing.
      if (isNotSupported(err)) return "unsupported";
      return turn.signal.aborted && !signal.aborted;
    } finally {
      this.#release(turn);
    }
  }

  async #copy(
    stream: ReadableStream<Uint8Array>,
    log: ContainerLog,
    resume: ResumePoint | undefined,
    signal: AbortSignal,
  ): Promise<void> {
    const reader = stream.getReader();
    const cancel = () => void reader.cancel().catch(() => {});
    signal.addEventListener("abort", cancel, { once: true });
    const decoder = new TextDecoder();
    let pending = "";
    // The stream's lines come in time order. At the last written time (first the resume
    // point's), the records already written there are skipped by count; a line older than it is
    // one the backend gives again (a follow whose cursor slipped back): dropped, and the count
    // at that time skipped again when the replay reaches it.
    let floor = resume?.time;
    let atFloor = resume?.count ?? 0;
    let skip = atFloor;
    try {
      while (true) {
        const { value, done } = await reader.read();
        if (done) break;
        pending += decoder.decode(value, { stream: true });
        const lines = pending.split("\n");
        pending = lines.pop()!;
        for (const line of lines) {
          const space = line.indexOf(" ");
          const time = space > 0 ? normalizeLogTime(line.slice(0, space)) : undefined;
          const text = time ? line.slice(space + 1) : line;
          if (time && floor) {
            if (time < floor) {
              skip = atFloor;
              continue;
            }
            if (time === floor && skip > 0) {
              skip--;
              continue;
            }
          }
          if (time && time === floor) atFloor++;
          else if (time) [floor, atFloor, skip] = [time, 1, 0];
          const stamp = time ?? formatLogTime(this.#o.clock.now());
          const split = new CriLineSplitter();
          const parts = [...split.push(new TextEncoder().encode(`${text}\n`))];
          for (const part of parts) {
            await log.write("stdout", part.text, { partial: part.partial, time: stamp });
          }
        }
      }
    } finally {
      signal.removeEventListener("abort", cancel);
      reader.releaseLock();
    }
  }

  /** Waits for a stream slot; while it waits, the longest holder's turn ends every turnMs. */
  async #acquire(turn: AbortController, signal: AbortSignal): Promise<void> {
    const max = this.#o.dir.options.maxStreams ?? 200;
    if (this.#holders.size + this.#handedOver < max && this.#waiting.length === 0) {
      this.#holders.set(turn, this.#o.clock.now());
      return;
    }
    let handed = false;
    let wake!: () => void;
    const woken = new Promise<void>((resolve) => {
      wake = () => {
        handed = true;
        resolve();
      };
      this.#waiting.push(wake);
    });
    while (!handed && !signal.aborted) {
      await Promise.race([woken, this.#o.clock.sleep(this.#o.turnMs ?? 30_000, signal)])
        .catch(() => {});
      if (!handed && !signal.aborted) this.#longestHolder()?.abort();
    }
    if (handed) this.#handedOver--;
    else this.#waiting.splice(this.#waiting.indexOf(wake), 1);
    this.#holders.set(turn, this.#o.clock.now());
  }

  #longestHolder(): AbortController | undefined {
    return [...this.#holders].sort((a, b) => a[1] - b[1])[0]?.[0];
  }

  /** Frees the slot, handing it to the first waiter (counted until it takes it). */
  #release(turn: AbortController): void {
    if (!this.#holders.delete(turn)) return;
    const next = this.#waiting.shift();
    if (next) {
      this.#handedOver++;
      next();
    }
  }
}
