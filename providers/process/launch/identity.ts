/**
 * The identity a container's processes get: user, group, supplementary groups and
 * capabilities from its `securityContext`, applied with `setpriv` (util-linux) to the
 * container's command, to exec sessions, probes and hooks alike.
 *
 * - The container's fields win over the pod's, as in the kubelet
 *   (kubernetes/kubernetes pkg/securitycontext/util.go `DetermineEffectiveSecurityContext`);
 *   the pod's `supplementalGroups` and `fsGroup` are added to the groups
 *   (pkg/kubelet/kuberuntime/security_context.go).
 * - `runAsUser` without `runAsGroup` takes the user's group from the host's `/etc/passwd` (the
 *   host is the image here), as containerd does with an image's passwd file; a uid the host
 *   does not name gets the gid of the same number, not containerd's 0: here gid 0 is the
 *   host's root group.
 * - The uids and gids must be ones the node's config allows (./id_allowlist.ts), checked at a
 *   container's start.
 * - `runAsNonRoot` is checked with the kubelet's messages
 *   (pkg/kubelet/kuberuntime/security_context_others.go `verifyRunAsNonRoot`).
 * - Capabilities: without `privileged: true` the bounding set is the container runtime's
 *   default (containerd 1.x oci/spec.go `defaultUnixCaps`, the same 14 as Docker's), changed
 *   by `drop`/`add` as containerd's CRI plugin does (`ALL` first, then the named ones, drop
 *   winning). A root process keeps exactly that set; a non-root one has no effective
 *   capabilities, as in a container without ambient capabilities.
 * - `allowPrivilegeEscalation: false` sets no_new_privs.
 * @module
 */
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import { toolPath } from "../host/host_tools.ts";
import { readProcText } from "../host/proc.ts";
import { effectiveSecurityContext } from "../../../provider/mod.ts";
import { type AllowedIds, checkAllowedIds, type HostIds, readHostIds } from "./id_allowlist.ts";

/** The containerd/Docker default capability set, without the `CAP_` prefix. */
export const DEFAULT_CAPABILITIES: readonly string[] = [
  "CHOWN",
  "DAC_OVERRIDE",
  "FSETID",
  "FOWNER",
  "MKNOD",
  "NET_RAW",
  "SETGID",
  "SETUID",
  "SETFCAP",
  "SETPCAP",
  "NET_BIND_SERVICE",
  "SYS_CHROOT",
  "KILL",
  "AUDIT_WRITE",
];

/** Every Linux capability by name (capabilities(7)), in kernel order. */
const ALL_CAPABILITIES = [
  "CHOWN",
  "DAC_OVERRIDE",
  "DAC_READ_SEARCH",
  "FOWNER",
  "FSETID",
  "KILL",
  "SETGID",
  "SETUID",
  "SETPCAP",
  "LINUX_IMMUTABLE",
  "NET_BIND_SERVICE",
  "NET_BROADCAST",
  "NET_ADMIN",
  "NET_RAW",
  "IPC_LOCK",
  "IPC_OWNER",
  "SYS_MODULE",
  "SYS_RAWIO",
  "SYS_CHROOT",
  "SYS_PTRACE",
  "SYS_PACCT",
  "SYS_ADMIN",
  "SYS_BOOT",
  "SYS_NICE",
  "SYS_RESOURCE",
  "SYS_TIME",
  "SYS_TTY_CONFIG",
  "MKNOD",
  "LEASE",
  "AUDIT_WRITE",
  "AUDIT_CONTROL",
  "SETFCAP",
  "MAC_OVERRIDE",
  "MAC_ADMIN",
  "SYSLOG",
  "WAKE_ALARM",
  "BLOCK_SUSPEND",
  "AUDIT_READ",
  "PERFMON",
  "BPF",
  "CHECKPOINT_RESTORE",
];

/** Who a container's processes run as. */
export interface ProcessIdentity {
  uid: number;
  gid: number;
  groups: number[];
  /** The bounding set, or "all" for a privileged container. */
  capabilities: string[] | "all";
  noNewPrivs: boolean;
}

/** vkubelet's own uid and gid (what a container runs as when its spec names none). */
export interface HostUser {
  uid: number;
  gid: number;
}

/** The identity of `container`, or the kubelet's reason it may not start. */
export type IdentityResult =
  | { ok: true; identity: ProcessIdentity }
  | { ok: false; message: string };

/** The container's effective identity (see the module doc). */
export function resolveIdentity(
  pod: Pod,
  container: Container,
  host: HostUser,
  hostIds: HostIds = readHostIds(),
): IdentityResult {
  const podSc = pod.spec?.securityContext ?? {};
  const sc = effectiveSecurityContext(podSc, container);
  const { runAsUser, runAsGroup, runAsNonRoot: nonRoot } = sc;
  const uid = runAsUser ?? host.uid;
  if (nonRoot && uid === 0) {
    const { name, namespace, uid: podUid } = pod.metadata ?? {};
    const who = JSON.stringify(`${name}_${namespace}(${podUid})`);
    return {
      ok: false,
      message: runAsUser === undefined
        ? `container has runAsNonRoot and image will run as root (pod: ${who}, container: ${container.name})`
        : `container's runAsUser breaks non-root policy (pod: ${who}, container: ${container.name})`,
    };
  }
  const gid = runAsGroup ??
    (runAsUser === undefined ? host.gid : hostIds.users.get(uid)?.gid ?? uid);
  const groups = [...podSc.supplementalGroups ?? []];
  if (podSc.fsGroup !== undefined) groups.push(podSc.fsGroup);
  const capabilities = sc.privileged ? "all" as const : boundingSet(sc.capabilities ?? {});
  if (typeof capabilities === "string" && capabilities !== "all") {
    return { ok: false, message: `container ${container.name}: ${capabilities}` };
  }
  return {
    ok: true,
    identity: {
      uid,
      gid,
      groups: [...new Set(groups)],
      capabilities,
      noNewPrivs: sc.allowPrivilegeEscalation === false && !sc.privileged,
    },
  };
}

/** The bounding set from the default, `add` and `drop`; or what is wrong with a name. */
function boundingSet(caps: { add?: string[]; drop?: string[] }): string[] | "all" | string {
  const normal = (name: string) => name.toUpperCase().replace(/^CAP_/, "");
  const add = (caps.add ?? []).map(normal);
  const drop = (caps.drop ?? []).map(normal);
  for (const name of [...add, ...drop]) {
    if (name !== "ALL" && !ALL_CAPABILITIES.includes(name)) {
      return `capability ${name} in securityContext.capabilities is not a Linux capability; use names such as NET_ADMIN or SYS_TIME`;
    }
  }
  let set = new Set<string>(DEFAULT_CAPABILITIES);
  if (add.includes("ALL")) set = new Set(ALL_CAPABILITIES);
  if (drop.includes("ALL")) set = new Set();
  for (const name of add) if (name !== "ALL") set.add(name);
  for (const name of drop) set.delete(name);
  if (set.size === ALL_CAPABILITIES.length) return "all";
  return ALL_CAPABILITIES.filter((name) => set.has(name));
}

/** True if the identity changes nothing for a process started by `host`. */
function isHostIdentity(identity: ProcessIdentity, host: HostUser): boolean {
  return identity.uid === host.uid && identity.gid === host.gid &&
    identity.groups.length === 0 && identity.capabilities === "all" && !identity.noNewPrivs;
}

/**
 * The `setpriv` argv prefix that gives a process `identity` (`[]` when vkubelet is not root and
 * the identity is its own), or why a non-root vkubelet cannot give it.
 */
export function setprivArgv(
  identity: ProcessIdentity,
  host: HostUser,
): { ok: true; argv: string[] } | { ok: false; message: string } {
  if (host.uid !== 0) {
    // Without root there is nothing to drop: such a process has no capabilities.
    const same = identity.uid === host.uid && identity.gid === host.gid &&
      identity.groups.length === 0 && identity.capabilities !== "all";
    if (same || isHostIdentity(identity, host)) {
      return { ok: true, argv: identity.noNewPrivs ? [toolPath("setpriv"), "--nnp", "--"] : [] };
    }
    const message =
      `vkubelet runs as uid ${host.uid}, not root, and cannot run a container as another user or group or privileged; run vkubelet as root or remove runAsUser, runAsGroup, supplementalGroups, fsGroup and privileged from the pod`;
    return { ok: false, message };
  }
  const argv = [toolPath("setpriv"), `--reuid=${identity.uid}`, `--regid=${identity.gid}`];
  argv.push(identity.groups.length ? `--groups=${identity.groups.join(",")}` : "--clear-groups");
  if (identity.capabilities !== "all") {
    const keep = identity.capabilities.map((name) => `+${name.toLowerCase()}`);
    argv.push(`--bounding-set=${["-all", ...keep].join(",")}`, "--inh-caps=-all");
  }
  if (identity.noNewPrivs) argv.push("--nnp");
  argv.push("--");
  return { ok: true, argv };
}

/**
 * vkubelet's own uid and gid, from `/proc/self/status` (`Deno.uid()` would want
 * `--allow-sys`, which vkubelet is not given; a `cat` fallback runs as the same user).
 */
export function hostUser(): HostUser {
  const status = readProcText("/proc/self/status");
  const id = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? 0);
  return { uid: id("Uid"), gid: id("Gid") };
}

/**
 * The identity of `container`, checked to be one this vkubelet can give, or why not. With
 * `allowed` (the config's `allowedIds`, given at a container's start) its ids are checked
 * against it too; exec sessions of a running instance take the identity it started with.
 */
export function containerIdentity(
  pod: Pod,
  container: Container,
  host: HostUser,
  allowed?: AllowedIds,
): IdentityResult {
  const hostIds = readHostIds();
  const resolved = resolveIdentity(pod, container, host, hostIds);
  if (!resolved.ok) return resolved;
  if (allowed) {
    const { uid, gid } = resolved.identity;
    const sc = effectiveSecurityContext(pod.spec?.securityContext ?? {}, container);
    const derivedGid = sc.runAsGroup === undefined && sc.runAsUser !== undefined;
    const why = checkAllowedIds(pod, container, { uid, gid, derivedGid }, {
      host,
      allowed,
      hostIds,
    });
    if (why) return { ok: false, message: why };
  }
  const prefix = setprivArgv(resolved.identity, host);
  return prefix.ok ? resolved : prefix;
}
