/**
 * Which host uids and gids a pod may give its containers (config `allowedIds`). There is no user
 * namespace here: `runAsUser`, `runAsGroup`, `supplementalGroups` and `fsGroup` are ids of the
 * host, over the host's files, so a pod that joined `shadow` or `ssl-cert` read `/etc/shadow` and
 * the host's TLS keys, and `disk` or `docker` would give it root. So every uid and gid a
 * container's processes would get is checked before anything of it is written or started:
 *
 * - it must lie in one of the config's ranges (default `1000-65535`, which leaves out the
 *   system ids below 1000 and the subordinate ids of `/etc/subuid`, from 100000 by default);
 * - an id the host's `/etc/passwd` names (a uid) or `/etc/group` or a user's primary group
 *   names (a gid) is allowed only when the config lists that id by itself (`"65534"`), not as
 *   part of a range: a login user's uid would give the pod that user's files, a group the
 *   group's;
 * - vkubelet's own uid, and its own gid together with it, are what a pod that names no user
 *   gets: naming them gives nothing more, so they are not checked (`runAsNonRoot` governs
 *   root as the kubelet does).
 *
 * A refusal is the kubelet's `CreateContainerConfigError` and names the field.
 * @module
 */
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";

/** The largest id Linux gives a user or group ((uid_t)-1 means "no change"). */
export const MAX_ID = 4294967294;

/** The config's lists of ids and ranges, each `"N"` or `"N-M"`. */
export interface AllowedIds {
  uids: string[];
  gids: string[];
}

/** The users and groups the host's `/etc/passwd` and `/etc/group` name. */
export interface HostIds {
  /** uid → name and primary gid. */
  users: Map<number, { name: string; gid: number }>;
  /** gid → name, from `/etc/group`. */
  groups: Map<number, string>;
}

/** The range `"N"` or `"N-M"` stands for, or undefined if it is not one. */
export function parseIdRange(text: string): { from: number; to: number } | undefined {
  const match = /^(\d+)(?:-(\d+))?$/.exec(text.trim());
  if (!match) return undefined;
  const from = Number(match[1]);
  const to = Number(match[2] ?? match[1]);
  return from <= to && to <= MAX_ID ? { from, to } : undefined;
}

/** The users and groups of the host's `/etc/passwd` and `/etc/group` (none where unreadable). */
export function readHostIds(etc = "/etc"): HostIds {
  const lines = (file: string) => {
    try {
      return Deno.readTextFileSync(`${etc}/${file}`).split("\n").map((l) => l.split(":"));
    } catch {
      return [];
    }
  };
  const isId = (field: string | undefined) => field !== undefined && /^\d+$/.test(field);
  const users = new Map<number, { name: string; gid: number }>();
  for (const [name, , uid, gid] of lines("passwd")) {
    if (isId(uid) && isId(gid)) users.set(Number(uid), { name, gid: Number(gid) });
  }
  const groups = new Map<number, string>();
  for (const [name, , gid] of lines("group")) if (isId(gid)) groups.set(Number(gid), name);
  return { users, groups };
}

/** What the host calls gid `gid`, if anything: its group, or the users it is the group of. */
function hostGroupName(gid: number, hostIds: HostIds): string | undefined {
  const group = hostIds.groups.get(gid);
  if (group !== undefined) return `group ${group}`;
  const users = [...hostIds.users.values()].filter((u) => u.gid === gid).map((u) => u.name);
  return users.length ? `primary group of user ${users.join(", ")}` : undefined;
}

/** Why `id` may not be used under `entries`, or undefined if it may. */
function refusal(
  kind: "uid" | "gid",
  id: number,
  entries: string[],
  hostName: string | undefined,
): string | undefined {
  const ranges = entries.map(parseIdRange).filter((r) => r !== undefined);
  if (ranges.some((r) => r.from === id && r.to === id)) return undefined;
  if (!hostName && ranges.some((r) => r.from <= id && id <= r.to)) return undefined;
  const key = `allowedIds.${kind}s`;
  const now = entries.length ? entries.join(", ") : "none";
  return hostName
    ? `${kind} ${id} is the host's ${hostName}, which pods may use only if the node's config lists ${id} by itself in ${key} (now: ${now}); use an id the host does not name`
    : `${kind} ${id} is not allowed on this node (${key}: ${now}); use an id in those ranges, or ask the node's admin to list it`;
}

/** Who a container would run as (./identity.ts), before the allowlist is applied. */
export interface NamedIds {
  uid: number;
  gid: number;
  /** True if the gid comes from the host's /etc/passwd or the uid, not from runAsGroup. */
  derivedGid: boolean;
}

/**
 * Why the ids `ids` of `container` may not be used on this node (naming the field), or
 * undefined if they may; `host` is vkubelet's own uid and gid (see the module doc).
 */
export function checkAllowedIds(
  pod: Pod,
  container: Container,
  ids: NamedIds,
  context: { host: { uid: number; gid: number }; allowed: AllowedIds; hostIds: HostIds },
): string | undefined {
  const { host, allowed, hostIds } = context;
  const podSc = pod.spec?.securityContext ?? {};
  const field = (name: "runAsUser" | "runAsGroup") =>
    container.securityContext?.[name] !== undefined
      ? `securityContext.${name}`
      : `spec.securityContext.${name}`;
  const own = ids.uid === host.uid;
  const checks: { field: string; kind: "uid" | "gid"; id: number }[] = [];
  if (!own) checks.push({ field: field("runAsUser"), kind: "uid", id: ids.uid });
  const gidField = ids.derivedGid
    ? `${field("runAsUser")} without runAsGroup (the user's group)`
    : field("runAsGroup");
  checks.push({ field: gidField, kind: "gid", id: ids.gid });
  for (const gid of podSc.supplementalGroups ?? []) {
    checks.push({ field: "spec.securityContext.supplementalGroups", kind: "gid", id: gid });
  }
  if (podSc.fsGroup !== undefined) {
    checks.push({ field: "spec.securityContext.fsGroup", kind: "gid", id: podSc.fsGroup });
  }
  for (const check of checks) {
    if (check.kind === "gid" && own && check.id === host.gid) continue;
    const hostName = check.kind === "uid"
      ? hostIds.users.has(check.id) ? `user ${hostIds.users.get(check.id)!.name}` : undefined
      : hostGroupName(check.id, hostIds);
    const why = refusal(check.kind, check.id, allowed[`${check.kind}s`], hostName);
    if (why) return `container ${container.name}: ${check.field}: ${why}`;
  }
  return undefined;
}
