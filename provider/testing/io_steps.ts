/**
 * The suite's rules for the optional capabilities: log options, exec exit codes, calls that end
 * when their signal aborts, and answers for a pod the provider does not run.
 * @module
 */
import type { Node } from "kubernetes-types/core/v1.d.ts";
import type { ContainerRef } from "../contract.ts";
import { isNotFound } from "../errors.ts";
import { podKeyOf } from "../pod_table.ts";
import { ConformanceError, eventually, type Rule, type Session, within } from "./_session.ts";

const STAMPED = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)) (.*)$/;

function containerOf(s: Session): ContainerRef {
  const pod = s.pod!;
  return {
    namespace: pod.metadata!.namespace!,
    pod: pod.metadata!.name!,
    container: pod.spec!.containers[0].name,
  };
}

/** `logs`: tailLines, limitBytes and timestamps against the plain log. */
export async function logsStep(s: Session, rule: Rule): Promise<void> {
  const { provider } = s.main;
  const ref = containerOf(s);
  const read = (options: { tailLines?: number; limitBytes?: number; timestamps?: boolean }) =>
    within(rule, `getContainerLogs(${JSON.stringify(options)})`, s.timeoutMs, async (signal) => {
      const stream = await provider.getContainerLogs!(ref, { ...options, signal });
      return new Uint8Array(await new Response(stream).arrayBuffer());
    });
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  const lines = (bytes: Uint8Array) => text(bytes).split("\n").slice(0, -1);
  const plain = await eventually(
    rule,
    `a log line (more than 4 bytes) of ${podKeyOf(s.pod ?? {})}`,
    s.timeoutMs,
    async () => {
      const bytes = await read({});
      return lines(bytes).length >= 1 && bytes.length > 4 && bytes;
    },
  );
  const tail = text(await read({ tailLines: 1 }));
  const later = await read({});
  const lastLines = [lines(plain).at(-1), lines(later).at(-1)].map((l) => `${l}\n`);
  if (!lastLines.includes(tail)) {
    throw new ConformanceError(
      rule,
      `tailLines: 1 gave ${JSON.stringify(tail)}, the log's last line is ${
        JSON.stringify(lastLines[0])
      }`,
    );
  }
  const limited = await read({ limitBytes: 4 });
  if (text(limited) !== text(plain.subarray(0, 4))) {
    throw new ConformanceError(
      rule,
      `limitBytes: 4 gave ${JSON.stringify(text(limited))}, not the log's first 4 bytes ${
        JSON.stringify(text(plain.subarray(0, 4)))
      }`,
    );
  }
  const stamped = lines(await read({ timestamps: true }));
  const newest = lines(await read({}));
  const bad = stamped.find((line) => !STAMPED.test(line));
  if (bad !== undefined) {
    throw new ConformanceError(rule, `timestamps: true gave the line ${JSON.stringify(bad)}`);
  }
  const texts = stamped.map((line) => line.match(STAMPED)![2]);
  if (texts.length < lines(plain).length || texts.some((t, i) => t !== newest[i])) {
    throw new ConformanceError(
      rule,
      `timestamps: true gave the lines ${JSON.stringify(texts)} for the log ${
        JSON.stringify(newest)
      }`,
    );
  }
}

/** `exec`: exit codes 0 and 3, and stdout. */
export async function execStep(s: Session, rule: Rule): Promise<void> {
  const { provider } = s.main;
  const ref = containerOf(s);
  const run = async (script: string) => {
    const out = collector();
    const err = collector();
    const command = ["sh", "-c", script];
    const code = await within(
      rule,
      `runInContainer(${JSON.stringify(command)})`,
      s.timeoutMs,
      (signal) =>
        provider.runInContainer!(ref, {
          command,
          io: { stdout: out.writable, stderr: err.writable, tty: false },
          signal,
        }),
    );
    return { code, stdout: out.text(), stderr: err.text() };
  };
  const ok = await run("echo conformance");
  if (ok.code !== 0 || ok.stdout !== "conformance\n") {
    throw new ConformanceError(
      rule,
      `sh -c "echo conformance" gave exit code ${ok.code} and stdout ${
        JSON.stringify(ok.stdout)
      } (stderr ${JSON.stringify(ok.stderr)})`,
    );
  }
  const failed = await run("exit 3");
  if (failed.code !== 3) {
    throw new ConformanceError(
      rule,
      `sh -c "exit 3" gave exit code ${failed.code} (stderr ${JSON.stringify(failed.stderr)})`,
    );
  }
}

/** `streams-end`: node-level calls settle; follow and attach end when their signal aborts. */
export async function streamsEndStep(s: Session, rule: Rule): Promise<void> {
  const { provider, deps } = s.main;
  const ms = s.timeoutMs;
  const settle = (what: string, call: (signal: AbortSignal) => Promise<unknown> | unknown) =>
    within(rule, what, ms, call).then(() => {}, (err) => {
      if (err instanceof ConformanceError) throw err;
      if (!(err instanceof Error)) {
        throw new ConformanceError(rule, `${what} rejected with a non-Error: ${String(err)}`);
      }
    });
  if (provider.ping) await settle("ping()", (signal) => provider.ping!({ signal }));
  if (provider.getStatsSummary) {
    await settle("getStatsSummary()", (signal) => provider.getStatsSummary!({ signal }));
  }
  if (provider.getMetricsResource) {
    await settle("getMetricsResource()", (signal) => provider.getMetricsResource!({ signal }));
  }
  if (provider.configureNode) {
    const node: Node = { apiVersion: "v1", kind: "Node", metadata: { name: deps.nodeName } };
    await settle("configureNode(node)", () => provider.configureNode!(node));
  }
  const ref = containerOf(s);
  if (provider.getContainerLogs) {
    await untilAborted(rule, "a follow log stream", ms, async (signal) => {
      const stream = await provider.getContainerLogs!(ref, { follow: true, signal });
      const reader = stream.getReader();
      try {
        while (!(await reader.read()).done);
      } finally {
        reader.releaseLock();
      }
    });
  }
  if (provider.attachToContainer) {
    const out = collector();
    await untilAborted(rule, "an attach session", ms, (signal) =>
      provider.attachToContainer!(ref, {
        io: { stdout: out.writable, stderr: collector().writable, tty: false },
        signal,
      }));
  }
}

/** Starts `call`, aborts its signal after 200 ms, and requires it to settle within `ms` more. */
async function untilAborted(
  rule: Rule,
  what: string,
  ms: number,
  call: (signal: AbortSignal) => Promise<unknown>,
): Promise<void> {
  const client = new AbortController();
  const timer = setTimeout(() => client.abort(new Error("the client went away")), 200);
  try {
    await within(
      rule,
      `${what} after its signal aborted`,
      ms + 200,
      (deadline) => call(AbortSignal.any([client.signal, deadline])).catch(() => {}),
    );
  } finally {
    clearTimeout(timer);
  }
}

/** `unknown-pod`: undefined or NotFoundError for a pod the provider does not run. */
export async function unknownPodStep(s: Session, rule: Rule): Promise<void> {
  const { provider } = s.main;
  const namespace = s.pod?.metadata?.namespace ?? "default";
  const name = `conformance-absent-${crypto.randomUUID().slice(0, 8)}`;
  const ref = { namespace, pod: name, container: "main" };
  const ms = s.timeoutMs;
  const empty = (call: string, value: unknown) => {
    if (value !== undefined) {
      throw new ConformanceError(rule, `${call} gave ${JSON.stringify(value)}, not undefined`);
    }
  };
  empty(
    "getPod",
    await within(rule, "getPod", ms, (signal) => provider.getPod(namespace, name, { signal })),
  );
  if (provider.getPodStatus) {
    empty(
      "getPodStatus",
      await within(
        rule,
        "getPodStatus",
        ms,
        (signal) => provider.getPodStatus!(namespace, name, { signal }),
      ),
    );
  }
  const notFound = async (what: string, call: (signal: AbortSignal) => Promise<unknown>) => {
    const outcome = await within(rule, what, ms, call).then(
      () => "it resolved",
      (err) => {
        if (err instanceof ConformanceError) throw err;
        return isNotFound(err) ? undefined : `it threw ${err?.name ?? typeof err}: ${err?.message}`;
      },
    );
    if (outcome) throw new ConformanceError(rule, `${what} for ${namespace}/${name}: ${outcome}`);
  };
  const io = { stdout: collector().writable, stderr: collector().writable, tty: false };
  if (provider.getContainerLogs) {
    await notFound("getContainerLogs", (signal) => provider.getContainerLogs!(ref, { signal }));
  }
  if (provider.runInContainer) {
    await notFound(
      "runInContainer",
      (signal) => provider.runInContainer!(ref, { command: ["true"], io, signal }),
    );
  }
  if (provider.attachToContainer) {
    await notFound(
      "attachToContainer",
      (signal) => provider.attachToContainer!(ref, { io, signal }),
    );
  }
  if (provider.portForward) {
    const stream = { readable: new Blob([]).stream(), writable: collector().writable };
    await notFound(
      "portForward",
      (signal) => provider.portForward!({ namespace, name }, { port: 8080, stream, signal }),
    );
  }
  const pod = { metadata: { namespace, name, uid: crypto.randomUUID() } };
  await within(rule, "deletePod", ms, (signal) => provider.deletePod(pod, { signal })).catch(
    (err) => {
      if (err instanceof ConformanceError || !isNotFound(err)) {
        throw err instanceof ConformanceError ? err : new ConformanceError(
          rule,
          `deletePod for ${namespace}/${name} threw ${err?.name}: ${err?.message}`,
        );
      }
    },
  );
}

/** A writable that keeps what is written, as text. */
function collector(): { writable: WritableStream<Uint8Array>; text: () => string } {
  const chunks: Uint8Array[] = [];
  return {
    writable: new WritableStream({ write: (chunk) => void chunks.push(chunk.slice()) }),
    text: () => new TextDecoder().decode(concat(chunks)),
  };
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}
