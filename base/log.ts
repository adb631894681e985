/**
 * Logging setup. Everything logs through `getLogger(["vkubelet", ...])` from `@logtape/logtape`
 * with stable keys (`pod: "ns/name"`, `node`, `err`); only this file decides where records go.
 * @module
 */
import {
  configure,
  defaultTextFormatter,
  getLogger,
  jsonLinesFormatter,
  type Logger,
  type LogRecord,
  reset,
} from "@logtape/logtape";

export type { Logger };
export { getLogger };

/** Log levels accepted by `--log-level`. */
export const LOG_LEVELS = ["trace", "debug", "info", "warning", "error", "fatal"] as const;
/** One of {@link LOG_LEVELS}. */
export type LogLevel = typeof LOG_LEVELS[number];

/** Options for {@link setupLogging}. */
export interface LoggingOptions {
  level: LogLevel;
  /** `text` for people, `json` for log collectors (one JSON object per line). */
  format?: "text" | "json";
}

const encoder = new TextEncoder();

/**
 * Sends every `vkubelet` record at `level` or above to stderr. Call once, from `main.ts`.
 * Errors in a record read as one line (their message and causes) unless the level is debug or
 * trace: a failing connection is one line per retry, not a stack trace.
 */
export async function setupLogging(options: LoggingOptions): Promise<void> {
  await reset();
  const base = options.format === "json" ? jsonLinesFormatter : defaultTextFormatter;
  const stacks = options.level === "debug" || options.level === "trace";
  const format = stacks ? base : (record: LogRecord) => base(withoutStacks(record));
  const stderr = (record: LogRecord) => {
    try {
      Deno.stderr.writeSync(encoder.encode(format(record)));
    } catch {
      // stderr closed: nowhere left to report to.
    }
  };
  await configure({
    sinks: { stderr },
    loggers: [
      { category: ["vkubelet"], lowestLevel: options.level, sinks: ["stderr"] },
      { category: ["logtape", "meta"], lowestLevel: "warning", sinks: ["stderr"] },
    ],
  });
}

/** `record` with every Error among its values replaced by {@link errorSummary}. */
export function withoutStacks(record: LogRecord): LogRecord {
  const summarise = (value: unknown) => value instanceof Error ? errorSummary(value) : value;
  if (!record.message.some((v) => v instanceof Error)) {
    if (!Object.values(record.properties).some((v) => v instanceof Error)) return record;
  }
  return {
    ...record,
    message: record.message.map(summarise),
    properties: Object.fromEntries(
      Object.entries(record.properties).map(([key, value]) => [key, summarise(value)]),
    ),
  };
}

/** An error on one line: its message, then each cause's (`message: cause: cause`). */
export function errorSummary(err: Error): string {
  const parts: string[] = [];
  const seen = new Set<unknown>();
  for (let current: unknown = err; current !== undefined && !seen.has(current);) {
    seen.add(current);
    const text = current instanceof Error ? current.message || current.name : String(current);
    if (!parts.some((p) => p.includes(text))) parts.push(text);
    current = current instanceof Error ? current.cause : undefined;
  }
  return parts.join(": ").replace(/\s*\n\s*/g, " ");
}
