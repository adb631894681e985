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

/** Sends every `vkubelet` record at `level` or above to stderr. Call once, from `main.ts`. */
export async function setupLogging(options: LoggingOptions): Promise<void> {
  await reset();
  const format = options.format === "json" ? jsonLinesFormatter : defaultTextFormatter;
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
