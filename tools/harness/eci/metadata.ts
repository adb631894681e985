/**
 * Alibaba's published request metadata for ECI (`./metadata/`, see its README for source and
 * licence) as a validator: a request whose action, version, method, parameter names, types,
 * positions, required parameters or list lengths (an ID list's "up to N IDs") do not match is
 * refused with every problem named. The current files (`metadata/current/`) are the reference;
 * where one lists a RepeatList without its fields (Port, EnvironmentVar, VolumeMount,
 * ConfigFileToPath...), the fields come from the older top-level file of the same operation.
 * @module
 */

/** One parameter as the metadata lists it. */
interface Param {
  name: string;
  type: "String" | "Integer" | "Long" | "Float" | "Boolean" | "RepeatList";
  position: string;
  required: boolean;
  description?: string;
  sub_parameters?: Param[];
}

/** One operation's metadata file. */
interface Operation {
  name: string;
  method: string;
  parameters: Param[];
}

/** The API version every ECI operation has (products.json: Eci, 2018-08-08, rpc). */
export const ECI_VERSION = "2018-08-08";

/** Parameters every RPC call carries (signature and envelope), not listed per operation. */
const COMMON = new Set([
  "Action",
  "Version",
  "Format",
  "Timestamp",
  "SignatureNonce",
  "SignatureMethod",
  "SignatureVersion",
  "AccessKeyId",
  "Signature",
  "SecurityToken",
]);

const dir = new URL("./metadata/", import.meta.url);

function read(path: string): Operation | undefined {
  try {
    return JSON.parse(Deno.readTextFileSync(new URL(path, dir)));
  } catch {
    return undefined;
  }
}

/** Fills RepeatLists without fields from the older file's same parameter. */
function merge(current: Param[], older: Param[] | undefined): Param[] {
  return current.map((p) => {
    const old = older?.find((o) => o.name === p.name);
    if (p.type !== "RepeatList") return p;
    if (p.sub_parameters?.length) {
      return { ...p, sub_parameters: merge(p.sub_parameters, old?.sub_parameters) };
    }
    return old?.sub_parameters?.length ? { ...p, sub_parameters: old.sub_parameters } : p;
  });
}

/** Every operation's merged metadata, by action name. */
export function loadOperations(): Map<string, Operation> {
  const out = new Map<string, Operation>();
  for (const entry of Deno.readDirSync(dir)) {
    if (!entry.name.endsWith(".json")) continue;
    const older = read(entry.name)!;
    const current = read(`current/${entry.name}`);
    out.set(
      older.name,
      current ? { ...current, parameters: merge(current.parameters, older.parameters) } : older,
    );
  }
  return out;
}

const TYPE_CHECKS: Record<string, (v: string) => boolean> = {
  String: () => true,
  Integer: (v) => /^-?\d+$/.test(v),
  Long: (v) => /^-?\d+$/.test(v),
  Float: (v) => /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(v),
  Boolean: (v) => v === "true" || v === "false",
};

/** Checks one key (dotted, with 1-based list indexes) against `params`; problems or none. */
function checkKey(
  params: Param[],
  segments: string[],
  value: string,
  seen: Map<string, Set<string>>,
  prefix: string,
): string[] {
  // The longest dotted name that the key starts with wins (`LivenessProbe.Exec.Command`).
  const candidates = params
    .map((p) => ({ p, parts: p.name.split(".") }))
    .filter(({ parts }) => parts.every((part, i) => segments[i] === part))
    .sort((a, b) => b.parts.length - a.parts.length);
  const match = candidates[0];
  const key = prefix + segments.join(".");
  if (!match) return [`${key}: no such parameter`];
  const { p, parts } = match;
  const rest = segments.slice(parts.length);
  const path = prefix + p.name;
  if (p.position !== "Query") return [`${key}: the metadata puts it in ${p.position}`];
  if (p.type !== "RepeatList") {
    if (rest.length) return [`${key}: ${path} is a ${p.type}, not a struct or list`];
    if (!TYPE_CHECKS[p.type]?.(value)) {
      return [`${key}: ${JSON.stringify(value)} is not a ${p.type}`];
    }
    return [];
  }
  const index = rest[0];
  if (index === undefined || !/^[1-9]\d*$/.test(index)) {
    return [`${key}: ${path} is a RepeatList; expected ${path}.N (N from 1)`];
  }
  const item = `${path}.${index}`;
  if (!p.sub_parameters?.length) {
    return rest.length > 1 ? [`${key}: ${path}'s items are plain values`] : [];
  }
  if (rest.length === 1) return [`${key}: ${path}'s items are structs; give their fields`];
  const fields = seen.get(item) ?? new Set<string>();
  seen.set(item, fields);
  const sub = rest.slice(1);
  const field =
    p.sub_parameters.map((s) => s.name).filter((n) => n.split(".").every((x, i) => sub[i] === x))
      .sort((a, b) => b.length - a.length)[0];
  if (field) fields.add(field);
  return checkKey(p.sub_parameters, sub, value, seen, `${item}.`);
}

/** Required fields missing from each list item seen. */
function missingInItems(params: Param[], seen: Map<string, Set<string>>, prefix: string): string[] {
  const problems: string[] = [];
  for (const p of params) {
    if (p.type !== "RepeatList" || !p.sub_parameters?.length) continue;
    for (const [item, fields] of seen) {
      if (!new RegExp(`^${escape(prefix + p.name)}\\.\\d+$`).test(item)) continue;
      for (const s of p.sub_parameters) {
        if (s.required && !fields.has(s.name)) problems.push(`${item}.${s.name}: required`);
      }
      problems.push(...missingInItems(p.sub_parameters, seen, `${item}.`));
    }
  }
  return problems;
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * A request as the emulator received it. Action and version come from the query (signature v1)
 * or from the `x-acs-action` / `x-acs-version` headers (signature v3, the SDK's default).
 */
export interface RpcRequest {
  method: string;
  action: string;
  version: string;
  query: URLSearchParams;
  /** Form parameters in the body (the metadata puts every parameter in the query). */
  body: URLSearchParams;
}

/** Every way the request strays from the metadata; empty when it matches. */
export function validateRequest(ops: Map<string, Operation>, request: RpcRequest): string[] {
  const action = request.action;
  const op = ops.get(action);
  if (!op) return [`Action ${JSON.stringify(action)} is not an ECI operation in the metadata`];
  const problems: string[] = [];
  const version = request.version;
  if (version !== ECI_VERSION) problems.push(`Version ${version}: expected ${ECI_VERSION}`);
  if (!op.method.split("|").includes(request.method)) {
    problems.push(`method ${request.method}: ${action} allows ${op.method}`);
  }
  for (const key of request.body.keys()) {
    problems.push(`${key}: sent in the body; the metadata puts it in Query`);
  }
  const seen = new Map<string, Set<string>>();
  const top = new Set<string>();
  for (const [key, value] of request.query) {
    if (COMMON.has(key)) continue;
    const segments = key.split(".");
    problems.push(...checkKey(op.parameters, segments, value, seen, ""));
    const name = op.parameters.map((p) =>
      p.name
    ).filter((n) => n.split(".").every((x, i) => segments[i] === x)).sort((a, b) =>
      b.length - a.length
    )[0];
    if (name) top.add(name);
  }
  for (const p of op.parameters) {
    if (p.required && !top.has(p.name)) problems.push(`${p.name}: required by ${action}`);
  }
  problems.push(...missingInItems(op.parameters, seen, ""));
  problems.push(...listLimits(op.parameters, request.query));
  return problems;
}

/**
 * A JSON list of IDs longer than its description allows ("You can specify up to 20 IDs":
 * DescribeContainerGroups and DescribeContainerGroupEvents `ContainerGroupIds`).
 */
function listLimits(params: Param[], query: URLSearchParams): string[] {
  const problems: string[] = [];
  for (const p of params) {
    const max = Number(/up to (\d+) IDs/.exec(p.description ?? "")?.[1]);
    const value = query.get(p.name);
    if (!max || value === null) continue;
    let ids: unknown;
    try {
      ids = JSON.parse(value);
    } catch {
      ids = undefined;
    }
    if (!Array.isArray(ids)) problems.push(`${p.name}: not a JSON list of IDs`);
    else if (ids.length > max) {
      problems.push(`${p.name}: ${ids.length} IDs; the metadata allows up to ${max}`);
    }
  }
  return problems;
}
