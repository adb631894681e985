/**
 * The test emulator's model of a container group's life, as Azure's documentation describes it
 * (this is test code; it is not Azure and never claims to be): provisioning (`Creating`, then
 * `Succeeded`), init containers one after another, then every container; a container that ends
 * is started again by the group's restart policy after a short back-off, its restart count goes
 * up and its previous state is kept, as ACI's instance view shows them.
 *
 * What a container does comes from its command, read as a tiny subset of `sh -c`: `echo TEXT`
 * writes a log line, `sleep N` waits (an hour or more: forever), `exit N` ends with N. A
 * container without a command runs until deleted.
 * @module
 */

/** How one container behaves. */
export interface Script {
  lines: string[];
  durationMs: number;
  /** `undefined`: runs until deleted. */
  exitCode?: number;
}

/** Reads a container's command as a {@link Script}. */
export function scriptOf(command: string[] | undefined): Script {
  if (!command?.length) return { lines: [], durationMs: 0 };
  const text = command[0].endsWith("sh") && command[1] === "-c"
    ? command.slice(2).join(" ")
    : command.join(" ");
  const script: Script = { lines: [], durationMs: 0, exitCode: 0 };
  for (const raw of text.split(/;|&&|\n/)) {
    const [word, ...rest] = raw.trim().replace(/^exec\s+/, "").split(/\s+/);
    const arg = rest.join(" ").replace(/^["']|["']$/g, "");
    if (word === "echo") script.lines.push(arg);
    if (word === "sleep") {
      const seconds = Number(rest[0]);
      if (!(seconds < 3600)) return { ...script, exitCode: undefined };
      script.durationMs += seconds * 1000;
    }
    if (word === "exit") return { ...script, exitCode: Number(rest[0]) || 0 };
  }
  return script;
}

/** One run of a container. */
export interface Run {
  startMs: number;
  endMs?: number;
  exitCode?: number;
}

/** A container as the emulator runs it. */
export interface ModelContainer {
  name: string;
  script: Script;
  runs: Run[];
}

/** The group-level facts the model needs. */
export interface ModelGroup {
  createdMs: number;
  restartPolicy: string;
  init: ModelContainer[];
  containers: ModelContainer[];
}

/** How long provisioning takes, and the back-off before a restart. */
export const TIMING = { provisionMs: 300, restartBackoffMs: 1000 };

function finish(c: ModelContainer, startMs: number): Run {
  const run: Run = { startMs };
  if (c.script.exitCode !== undefined) {
    run.endMs = startMs + Math.max(50, c.script.durationMs);
    run.exitCode = c.script.exitCode;
  }
  return run;
}

function restarts(policy: string, exitCode: number): boolean {
  return policy === "Always" || (policy === "OnFailure" && exitCode !== 0);
}

/** Runs `c` from `fromMs` up to `nowMs`; when it stopped for good, the time it did. */
function play(
  c: ModelContainer,
  policy: string,
  fromMs: number,
  nowMs: number,
): number | undefined {
  if (c.runs.length === 0) {
    if (fromMs > nowMs) return undefined;
    c.runs.push(finish(c, fromMs));
  }
  for (;;) {
    const last = c.runs.at(-1)!;
    if (last.endMs === undefined || last.endMs > nowMs) return undefined;
    if (!restarts(policy, last.exitCode ?? 0)) return last.endMs;
    const next = last.endMs + TIMING.restartBackoffMs;
    if (next > nowMs) return undefined;
    c.runs.push(finish(c, next));
  }
}

/** Brings the group's containers up to `nowMs`. */
export function advance(group: ModelGroup, nowMs: number): void {
  let at = group.createdMs + TIMING.provisionMs;
  for (const c of group.init) {
    // An init container runs until it succeeds (or fails for good under Never).
    const policy = group.restartPolicy === "Never" ? "Never" : "OnFailure";
    const ended = play(c, policy, at, nowMs);
    if (ended === undefined) return;
    if ((c.runs.at(-1)!.exitCode ?? 0) !== 0) return;
    at = ended;
  }
  for (const c of group.containers) play(c, group.restartPolicy, at, nowMs);
}

/** ACI's `ContainerState` of a run at `nowMs`. */
export function stateOf(run: Run | undefined, nowMs: number, waiting = "Waiting") {
  if (!run || run.startMs > nowMs) return { state: "Waiting", detailStatus: waiting };
  const startTime = new Date(run.startMs).toISOString();
  if (run.endMs === undefined || run.endMs > nowMs) {
    return { state: "Running", startTime, detailStatus: "" };
  }
  return {
    state: "Terminated",
    startTime,
    exitCode: run.exitCode ?? 0,
    finishTime: new Date(run.endMs).toISOString(),
    detailStatus: run.exitCode ? "Error" : "Completed",
  };
}

/** ACI's instance view of a container at `nowMs`. */
export function instanceView(c: ModelContainer, nowMs: number) {
  const started = c.runs.filter((r) => r.startMs <= nowMs);
  const current = started.at(-1);
  const previous = started.at(-2);
  const first = started[0];
  const events = first
    ? [
      event("Pulling", `pulling image`, first.startMs - 100, 1),
      event("Pulled", `Successfully pulled image`, first.startMs - 50, 1),
      event("Started", "Started container", first.startMs, started.length, current!.startMs),
    ]
    : [];
  return {
    restartCount: Math.max(0, started.length - 1),
    currentState: stateOf(current, nowMs),
    ...(previous ? { previousState: stateOf(previous, nowMs) } : {}),
    events,
  };
}

function event(name: string, message: string, firstMs: number, count: number, lastMs = firstMs) {
  return {
    count,
    firstTimestamp: new Date(firstMs).toISOString(),
    lastTimestamp: new Date(lastMs).toISOString(),
    name,
    message,
    type: "Normal",
  };
}

/** The current run's log: ACI's `Logs.content`, each line with its time when asked. */
export function logOf(c: ModelContainer, nowMs: number, tail?: number, timestamps = false) {
  const run = c.runs.filter((r) => r.startMs <= nowMs).at(-1);
  if (!run) return "";
  let lines = c.script.lines.map((text, i) =>
    timestamps ? `${new Date(run.startMs + i).toISOString()} ${text}` : text
  );
  if (tail !== undefined) lines = tail === 0 ? [] : lines.slice(-tail);
  return lines.map((l) => `${l}\n`).join("");
}
