/**
 * `kubectl attach` to a container's job step. The output is the step's log file from its current
 * end (`./logs.ts`, followed until the step exits or the session ends): stdout and stderr
 * combined, as the batch script writes them to one file, all sent on the session's stdout. A
 * container with `stdin: true` reads `stdin/NAME.RUN` in the pod directory (the batch script
 * passes it on with `tail -f`, `../request/script.ts`); the session's stdin is appended there. When the
 * session's stdin ends, a `stdinOnce` container's stdin is closed for good (`.closed` beside it)
 * and output keeps flowing until the step ends; otherwise the session ends there, as the
 * process provider's attach does (containerd internal/cri/io/container_io.go `Attach`).
 *
 * A session with stdin for a container without `stdin: true` is refused (nothing would read
 * it); without stdin any running container can be attached to, for its output. A container
 * with `tty: true`, or a session asking for a terminal, is refused: steps run without one.
 *
 * The stdin file, its `.closed` marker and the log are the job's: they are opened through
 * `../ownership/job_files.ts`, so a link the job put there is refused, never followed.
 * @module
 */
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type AttachIO,
  type Clock,
  InvalidInputError,
  NotSupportedError,
} from "../../../provider/mod.ts";
import type { SlurmConfig } from "../config.ts";
import { hostUser, jobUserOf } from "../ownership/identity.ts";
import {
  appendJobFile,
  createJobMarker,
  jobFileSize,
  type Owner,
  present,
} from "../ownership/job_files.ts";
import { readLogFile } from "./logs.ts";
import { podDirOf } from "../request/pod_dir.ts";
import { jobEnded, type SlurmHandle } from "../status.ts";

/** What a session connects to. */
export interface StepTarget {
  container: Container;
  /** The file the step's stdin is read from (`stdin: true` containers). */
  stdinFile: string;
  /** The job's user: owns the stdin file (given to it when vkubelet creates it) and the log. */
  owner: Owner;
  /**
   * The step's output from now on (the log's end is taken when this resolves, before any input
   * is sent); ends when the step has exited or `signal` aborts.
   */
  output: (signal: AbortSignal) => Promise<ReadableStream<Uint8Array>>;
}

/** The running step of `name` in the pod's run now (`handle`); refuses a container not running. */
export function stepTarget(
  pod: Pod,
  handle: SlurmHandle | undefined,
  name: string,
  config: SlurmConfig,
  clock: Clock,
): StepTarget {
  const container = [...pod.spec?.initContainers ?? [], ...pod.spec?.containers ?? []]
    .find((c) => c.name === name)!;
  const files = handle?.files.get(name);
  if (handle?.job?.state !== "RUNNING" || files?.startedMs === undefined || files.exit) {
    const state = files?.exit
      ? `its step exited with code ${files.exit.code}`
      : `its job is ${handle?.job?.state ?? "not yet submitted"}`;
    throw new InvalidInputError(
      `container ${name} is not running; attach needs a running job step, and ${state}`,
    );
  }
  const dir = podDirOf(config, pod);
  const owner = jobUserOf(config, pod.metadata?.namespace);
  const run = handle.run;
  const done = () =>
    handle.deleted === true || handle.files.get(name)?.exit !== undefined ||
    jobEnded(handle.job);
  return {
    container,
    stdinFile: `${dir}/stdin/${name}.${run}`,
    owner,
    output: async (signal) => {
      const path = `${dir}/logs/${name}.${run}.log`;
      const from = await jobFileSize(path, owner);
      return readLogFile({ path, owner, clock, done, from }, { follow: true, signal });
    },
  };
}

/** Runs one attach session until the step ends, the client goes or (without stdinOnce) its stdin ends. */
export async function attachToStep(
  target: StepTarget,
  io: AttachIO,
  signal: AbortSignal,
): Promise<void> {
  const { container } = target;
  if (container.tty) {
    throw new NotSupportedError(
      `container ${container.name} has tty: true, but the slurm provider runs job steps without a terminal, so it cannot attach to one; set tty: false and attach without -t, or use kubectl exec -it`,
    );
  }
  if (io.tty) {
    throw new InvalidInputError(
      `container ${container.name} was started without a terminal (tty: false); attach without -t`,
    );
  }
  if (io.stdin && !container.stdin) {
    throw new InvalidInputError(
      `container ${container.name} does not have stdin enabled; set stdin: true in its spec to send it input, or attach without -i`,
    );
  }
  const session = new AbortController();
  const stop = AbortSignal.any([session.signal, signal]);
  // The output starts where the log ends now, before the session's input can reach the step: an
  // answer to it is never taken for what came before (and skipped).
  const output = await target.output(stop);
  const copying = copyOutput(output, io.stdout, stop).finally(() => session.abort());
  const closed = `${target.stdinFile}.closed`;
  try {
    if (io.stdin && !await present(closed)) {
      const ended = await appendStdin(io.stdin, target, stop);
      if (container.stdinOnce && (ended === "eof" || signal.aborted)) {
        await createJobMarker(closed, target.owner, hostUser().uid);
      } else if (ended === "eof") session.abort();
    }
  } catch (err) {
    session.abort();
    await copying;
    throw err;
  }
  await copying;
}

/** Copies the step's output to the session's stdout until it ends or `stop` aborts. */
async function copyOutput(
  output: ReadableStream<Uint8Array>,
  stdout: WritableStream<Uint8Array> | undefined,
  stop: AbortSignal,
): Promise<void> {
  const reader = output.getReader();
  const writer = stdout?.getWriter();
  const stopped = abortPromise(stop);
  try {
    while (true) {
      const next = await Promise.race([
        reader.read(),
        stopped.then(() => ({ done: true as const, value: undefined })),
      ]).catch(() => ({ done: true as const, value: undefined }));
      if (next.done) break;
      if (!writer) continue;
      if (!await Promise.race([writer.write(next.value).then(() => true), stopped])) break;
    }
  } catch {
    // The client's stream failed: the session is over.
  } finally {
    await reader.cancel().catch(() => {});
    writer?.releaseLock();
  }
}

/** Appends the session's stdin to the step's stdin file; "eof" when it ended, else "stopped". */
async function appendStdin(
  stdin: ReadableStream<Uint8Array>,
  target: StepTarget,
  stop: AbortSignal,
): Promise<"eof" | "stopped"> {
  const file = await appendJobFile(target.stdinFile, target.owner, hostUser().uid);
  const reader = stdin.getReader();
  const stopped = abortPromise(stop).then(() => ({ done: true as const, value: undefined }));
  try {
    while (true) {
      const next = await Promise.race([reader.read(), stopped]);
      if (next.done) return stop.aborted ? "stopped" : "eof";
      let written = 0;
      while (written < next.value.length) {
        written += (await file.write(next.value, written)).bytesWritten;
      }
    }
  } catch {
    return "stopped"; // the client's stdin failed
  } finally {
    reader.releaseLock();
    await file.close();
  }
}

/** Resolves (with `false`) when `signal` aborts; never rejects. */
function abortPromise(signal: AbortSignal): Promise<false> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) =>
    signal.addEventListener("abort", () => resolve(false), { once: true })
  );
}
