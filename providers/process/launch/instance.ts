/**
 * One instance (start) of a container: its process (./launcher.ts), the pumps that copy its
 * stdout and stderr FIFOs into its log, and its end. Stopping follows the kubelet
 * (kubernetes/kubernetes pkg/kubelet/kuberuntime/kuberuntime_container.go `killContainer`):
 * SIGTERM to the process group, SIGKILL when the grace period is over. {@link Instance.detach}
 * lets go of a running instance without touching it, for a vkubelet shutdown.
 * @module
 */
import {
  adopt,
  launch,
  type LaunchSpec,
  type ProcessHandle,
  readExitFile,
  signalGroup,
} from "./launcher.ts";
import { LogWriter, pumpFifo } from "../streams/log_writer.ts";
import { removeCgroup, wasOomKilled } from "../host/cgroups.ts";
import { OutputFanout } from "../streams/output_fanout.ts";
import {
  hostPidOf,
  instanceTree,
  isSameProcess,
  type ProcStat,
  readProcStat,
} from "../host/proc.ts";
import { killInstance } from "./reaper.ts";
import type { InstanceRecord, Termination } from "../state/state.ts";
import { type Clock, type ContainerLog, unknownEnd } from "../../../provider/mod.ts";

/** Files and settings of one instance. */
export interface InstanceFiles {
  exitFile: string;
  stdoutFifo: string;
  stderrFifo: string;
  /** Used only by an instance started with stdin (`InstanceRecord.stdin`). */
  stdinFifo: string;
  /** The PID of the process that keeps the stdin FIFO open (see ./launcher.ts). */
  stdinHolderFile: string;
  logPath: string;
  logMaxBytes: number;
  logMaxFiles: number;
  /** Opens the instance's log in the node's pod log directory, if there is one. */
  podLog?: (containerId: string) => Promise<ContainerLog>;
  /** Bytes that end a pump without ending the instance (written by {@link Instance.detach}). */
  stopMarker: Uint8Array;
}

/** A running container instance. */
export class Instance {
  readonly record: InstanceRecord;
  readonly #handle: ProcessHandle;
  readonly #files: InstanceFiles;
  readonly #clock: Clock;
  readonly #writer: LogWriter;
  readonly #pumps: Promise<void>[];
  /** Ends the pumps whose stop marker never came (../streams/log_writer.ts). */
  readonly #cutPumps = new AbortController();
  #killedBy?: "SIGKILL";
  /** The instance's processes when a stop began (their parents may be gone at the end). */
  #seen: ProcStat[] = [];
  #detached = false;
  #stopPolling?: AbortController;
  #endedUnwatched = false;
  /** Resolves with how the instance ended (never, if detached first). */
  readonly ended: Promise<Termination>;
  /** Live stdout/stderr for attach sessions; closed once the pumps have ended. */
  readonly output: OutputFanout = new OutputFanout();

  /**
   * vkubelet's own read-write ends of the FIFOs, opened before the instance starts: they keep
   * each pipe (and what a short-lived command wrote into it) alive until `cat` reads it. The
   * pumps therefore end at the stop marker, which is written once the instance has ended.
   */
  readonly #holds: Deno.FsFile[];

  private constructor(
    record: InstanceRecord,
    handle: ProcessHandle,
    files: InstanceFiles,
    clock: Clock,
    holds: Deno.FsFile[],
  ) {
    this.record = record;
    this.#holds = holds;
    this.#handle = handle;
    this.#files = files;
    this.#clock = clock;
    this.#writer = new LogWriter({
      path: files.logPath,
      maxBytes: files.logMaxBytes,
      maxFiles: files.logMaxFiles,
      clock,
      openCopy: files.podLog && (() => files.podLog!(record.containerId)),
    });
    this.#pumps = (["stdout", "stderr"] as const).map((stream) =>
      pumpFifo(stream === "stdout" ? files.stdoutFifo : files.stderrFifo, {
        stream,
        writer: this.#writer,
        stopMarker: files.stopMarker,
        onOutput: (data) => this.output.publish(stream, data),
        signal: this.#cutPumps.signal,
      }).catch(() => {})
    );
    this.ended = this.#watch();
  }

  /** Starts a new instance. */
  static start(
    base: Omit<InstanceRecord, "pid" | "startTicks" | "startedAtMs" | "containerId">,
    spec: LaunchSpec,
    files: InstanceFiles,
    clock: Clock,
  ): Instance {
    const holds = holdFifos(files);
    const handle = launch(spec);
    const record: InstanceRecord = {
      ...base,
      pid: handle.pid,
      startTicks: handle.startTicks,
      startedAtMs: clock.now(),
      containerId: `process://${handle.pid}.${handle.startTicks}`,
    };
    return new Instance(record, handle, files, clock, holds);
  }

  /** Takes over an instance a previous vkubelet started (already checked to be alive). */
  static adopt(record: InstanceRecord, files: InstanceFiles, clock: Clock): Instance {
    const stopPolling = new AbortController();
    const sleep = (ms: number) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        stopPolling.signal.addEventListener("abort", () => {
          clearTimeout(timer);
          resolve();
        }, { once: true });
      });
    const handle = adopt(record.pid, record.startTicks, sleep, stopPolling.signal);
    const instance = new Instance(record, handle, files, clock, holdFifos(files));
    instance.#stopPolling = stopPolling;
    instance.#endedUnwatched = !isSameProcess(record.pid, record.startTicks);
    return instance;
  }

  async #watch(): Promise<Termination> {
    await this.#handle.exited;
    if (this.#detached) return new Promise<never>(() => {});
    // Whatever the command left behind goes with it, as with a container: its group, its
    // session, their children and its cgroup.
    signalGroup(this.record.pid, "SIGKILL");
    await killInstance(this.record, this.#seen, instanceTree);
    const [exit, setupErrors] = await Promise.all([
      readExitFile(this.#files.exitFile),
      this.#handle.setupErrors,
    ]);
    await this.#endPumps();
    await this.#writer.close();
    const oom = this.record.cgroup ? wasOomKilled(this.record.cgroup) : false;
    if (this.record.cgroup) await removeCgroup(this.record.cgroup);
    let exitCode = exit?.code ?? (this.#killedBy ? 137 : 128);
    let reason = exitCode === 0 ? "Completed" : "Error";
    let message: string | undefined;
    if (!exit && setupErrors.trim()) {
      exitCode = 128;
      reason = "StartError";
      message = `cannot set up the container's mounts: ${setupErrors.trim()}`;
    } else if (!exit && !this.#killedBy) {
      // The kit's rule for an end vkubelet infers (ContainerStatusUnknown, 137).
      const unknown = unknownEnd("no-exit-status", { nowMs: 0 });
      ({ exitCode, message } = unknown);
      reason = unknown.reason ?? reason;
    }
    if (oom) reason = "OOMKilled";
    return {
      instance: this.record.instance,
      exitCode,
      reason,
      message,
      startedAtMs: this.record.startedAtMs,
      // The file's time only if the instance ended while no vkubelet watched it; the clock's
      // otherwise, so that back-off and status times share one clock.
      finishedAtMs: (this.#endedUnwatched ? exit?.atMs : undefined) ?? this.#clock.now(),
      containerId: this.record.containerId,
    };
  }

  /** SIGTERM to the group; SIGKILL after `graceMs` on the clock; resolves once it ended. */
  async stop(graceMs: number): Promise<Termination> {
    const giveUp = new AbortController();
    this.#seen = instanceTree(this.record.pid);
    signalGroup(this.record.pid, "SIGTERM");
    const killer = this.#clock.sleep(Math.max(graceMs, 0), giveUp.signal).then(() => {
      this.#killedBy = "SIGKILL";
      signalGroup(this.record.pid, "SIGKILL");
    }, () => {});
    try {
      return await this.ended;
    } finally {
      giveUp.abort();
      await killer;
    }
  }

  /**
   * Writes the stop marker into both FIFOs (the pumps copy what came before it and stop),
   * waits for the pumps and lets go of the FIFOs.
   */
  async #endPumps(): Promise<void> {
    for (const hold of this.#holds) {
      try {
        await hold.write(this.#files.stopMarker);
      } catch {
        // closed already
      }
    }
    // The marker reaches the pump in a moment; should another reader of the FIFO take it (a
    // reader a previous vkubelet left behind), the pump is cut instead of waited on for ever.
    const pumped = Promise.all(this.#pumps);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<"late">((resolve) => timer = setTimeout(() => resolve("late"), 2_000));
    if (await Promise.race([pumped, late]) === "late") this.#cutPumps.abort();
    clearTimeout(timer);
    await pumped;
    this.output.close();
    for (const hold of this.#holds) {
      try {
        hold.close();
      } catch {
        // closed already
      }
    }
  }

  /** The stdin FIFO attach sessions may write, if the instance has one still open. */
  get stdinFifo(): string | undefined {
    return this.record.stdin && !this.record.stdinClosed ? this.#files.stdinFifo : undefined;
  }

  /**
   * Closes the container's stdin for good (`stdinOnce`): kills the holder, so that the command
   * reads EOF once the attach sessions writing to it have gone. The caller saves the record.
   */
  closeStdin(): void {
    if (!this.record.stdin || this.record.stdinClosed) return;
    this.record.stdinClosed = true;
    let pid: number;
    try {
      pid = Number(Deno.readTextFileSync(this.#files.stdinHolderFile).trim());
    } catch {
      return; // the runner never got that far
    }
    // In the container's PID namespace the runner wrote the namespace's number (an instance an
    // older vkubelet started has none: its number is the host's, checked below like any other).
    if (this.record.namespaced) pid = hostPidOf(this.record.pid, pid) ?? pid;
    const stat = Number.isInteger(pid) && pid > 0 ? readProcStat(pid) : undefined;
    // Only the holder of this instance: a reused PID would be in another process group.
    if (stat && stat.pgrp === this.record.pid && stat.state !== "Z") {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch {
        // gone meanwhile
      }
    }
  }

  /** Stops watching and pumping without touching the process (vkubelet is shutting down). */
  async detach(): Promise<void> {
    this.#detached = true;
    this.#stopPolling?.abort();
    await this.#endPumps();
    await this.#writer.close();
  }
}

/** Opens vkubelet's read-write ends of an instance's FIFOs (never blocks on Linux). */
function holdFifos(files: InstanceFiles): Deno.FsFile[] {
  const holds: Deno.FsFile[] = [];
  for (const fifo of [files.stdoutFifo, files.stderrFifo]) {
    try {
      holds.push(Deno.openSync(fifo, { read: true, write: true }));
    } catch {
      // Gone (an instance that ended long ago): its pump ends by itself.
    }
  }
  return holds;
}
