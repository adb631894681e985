/**
 * `/containerLogs` query parameters, decoded and validated as the kubelet does
 * (kubernetes/kubernetes pkg/kubelet/server/server.go `getContainerLogs`: the legacy `tail`,
 * then v1 `PodLogOptions` decoding — 400 when a value cannot be decoded — then
 * pkg/apis/core/validation `ValidatePodLogOptions` — 422 "Invalid request." for bad values and
 * combinations).
 * @module
 */
import type { ContainerLogOptions } from "../../provider/mod.ts";
import { HttpError } from "./status.ts";

/** The log options without the signal, as parsed from a query. */
export type ParsedLogOptions = Omit<ContainerLogOptions, "signal">;

/** Parses and validates; throws {@link HttpError} 400 or 422 as the kubelet answers. */
export function parseLogOptions(query: URLSearchParams): ParsedLogOptions {
  const first = (name: string) => query.getAll(name)[0];
  let tailText: string | undefined = first("tailLines");
  const legacyTail = first("tail");
  // `tail` predates `tailLines`; "all" means no limit (server.go getContainerLogs).
  if (legacyTail !== undefined && legacyTail !== "") {
    tailText = legacyTail === "all" ? undefined : legacyTail;
  }
  const options: ParsedLogOptions = {
    follow: parseBool(first("follow")),
    previous: parseBool(first("previous")),
    timestamps: parseBool(first("timestamps")),
    tailLines: parseInteger("tailLines", tailText),
    limitBytes: parseInteger("limitBytes", first("limitBytes")),
    sinceSeconds: parseInteger("sinceSeconds", first("sinceSeconds")),
    sinceTime: parseTime(first("sinceTime")),
  };
  validate(options, first("stream"));
  for (const key of Object.keys(options) as (keyof ParsedLogOptions)[]) {
    if (options[key] === undefined || options[key] === false) delete options[key];
  }
  return options;
}

function validate(options: ParsedLogOptions, stream: string | undefined): void {
  const invalid = (why: string) => {
    throw new HttpError(422, `Invalid request: ${why}`);
  };
  if (options.tailLines !== undefined && options.tailLines < 0) {
    invalid("tailLines must be 0 or more");
  }
  if (options.limitBytes !== undefined && options.limitBytes < 1) {
    invalid("limitBytes must be 1 or more");
  }
  if (options.sinceSeconds !== undefined && options.sinceTime !== undefined) {
    invalid("sinceSeconds and sinceTime cannot both be set");
  }
  if (options.sinceSeconds !== undefined && options.sinceSeconds < 1) {
    invalid("sinceSeconds must be 1 or more");
  }
  // Split streams need the PodLogsQuerySplitStreams gate (alpha, off by default); without it
  // only the default is accepted.
  if (stream !== undefined && stream !== "" && stream !== "All") {
    invalid(`stream ${JSON.stringify(stream)} is not supported; use All`);
  }
}

/** Go's query-to-bool conversion in apimachinery: absent, "0" or "false" is false. */
function parseBool(value: string | undefined): boolean {
  if (value === undefined) return false;
  return !(value === "0" || value.toLowerCase() === "false");
}

function parseInteger(name: string, value: string | undefined): number | undefined {
  if (value === undefined || value === "") return undefined;
  if (!/^[+-]?\d+$/.test(value)) {
    throw new HttpError(
      400,
      `Unable to decode query: ${name}=${JSON.stringify(value)} is not an integer`,
    );
  }
  const number = Number(value);
  if (!Number.isSafeInteger(number)) {
    throw new HttpError(400, `Unable to decode query: ${name}=${value} is out of range`);
  }
  return number;
}

// RFC 3339 with optional fraction, `Z` or an offset (metav1.Time's format).
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

function parseTime(value: string | undefined): Date | undefined {
  if (value === undefined || value === "") return undefined;
  const date = new Date(value);
  if (!RFC3339.test(value) || Number.isNaN(date.getTime()) || !fieldsInRange(value)) {
    throw new HttpError(
      400,
      `Unable to decode query: sinceTime=${JSON.stringify(value)} is not RFC 3339`,
    );
  }
  return date;
}

/**
 * Go's time.Parse refuses a day past the month's end (`2020-02-30`), hour 24, minute or second
 * 60 and offsets past 23:59; JavaScript's Date would roll them over into a valid date.
 */
function fieldsInRange(value: string): boolean {
  const [year, month, day, hour, minute, second] = value.match(/\d+/g)!.slice(0, 6).map(Number);
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const daysInMonth = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
  const offset = value.match(/([+-])(\d{2}):(\d{2})$/);
  const offsetOk = !offset || (Number(offset[2]) <= 23 && Number(offset[3]) <= 59);
  return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth && hour <= 23 &&
    minute <= 59 && second <= 59 && offsetOk;
}
