/**
 * Progress of the control-plane build for a person watching: which step it is in (downloading
 * Go modules, compiling) and, every 30 s, the time elapsed with the packages compiled so far,
 * read from `go build -v` on stderr. Lines that are neither a package nor a download (compiler
 * errors) are passed on at once.
 * @module
 */
import type { Clock } from "../../base/clock.ts";
import { formatDuration } from "../../base/duration.ts";

/** Options for {@link BuildProgress}. */
export interface BuildProgressOptions {
  clock: Clock;
  /** Prints one line for the person watching. */
  print: (line: string) => void;
  /** How often the elapsed time is printed; 30 s by default. */
  intervalMs?: number;
}

const DOWNLOAD = /^go: downloading (\S+) (\S+)$/;
const PACKAGE = /^[A-Za-z0-9_.~+-]+(\/[A-Za-z0-9_.~+-]+)*$/;

/** Counts what `go build -v` reports and prints a line per step and per interval. */
export class BuildProgress {
  readonly #options: BuildProgressOptions;
  readonly #started: number;
  #step = "resolving Go modules";
  #modules = 0;
  #packages = 0;
  #lastPackage: string | undefined;

  constructor(options: BuildProgressOptions) {
    this.#options = options;
    this.#started = options.clock.now();
  }

  /** Takes one line of `go build -v`'s stderr. */
  line(text: string): void {
    const download = DOWNLOAD.exec(text);
    if (download) {
      this.#enter("downloading Go modules");
      this.#modules++;
    } else if (PACKAGE.test(text)) {
      this.#enter("compiling");
      this.#packages++;
      this.#lastPackage = text;
    } else if (text.trim() !== "") {
      this.#options.print(text);
    }
  }

  /** The summary printed every interval, also useful at the end. */
  summary(): string {
    const elapsed = formatDuration(
      Math.floor((this.#options.clock.now() - this.#started) / 1000) * 1000,
    );
    const counts = [
      this.#modules ? `${this.#modules} modules downloaded` : "",
      this.#packages ? `${this.#packages} packages compiled, last ${this.#lastPackage}` : "",
    ].filter(Boolean).join(", ");
    return `  ${elapsed} elapsed: ${this.#step}${counts ? ` (${counts})` : ""}`;
  }

  /** Prints {@link summary} every interval until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const interval = this.#options.intervalMs ?? 30_000;
    while (!signal.aborted) {
      try {
        await this.#options.clock.sleep(interval, signal);
      } catch {
        return;
      }
      this.#options.print(this.summary());
    }
  }

  #enter(step: string): void {
    if (this.#step === step) return;
    this.#step = step;
    this.#options.print(`  step: ${step}`);
  }
}

/** Splits a byte stream into lines and hands each to `onLine`. */
export async function forEachLine(
  stream: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
): Promise<void> {
  let rest = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    const lines = (rest + chunk).split("\n");
    rest = lines.pop()!;
    for (const line of lines) onLine(line.replace(/\r$/, ""));
  }
  if (rest) onLine(rest);
}
