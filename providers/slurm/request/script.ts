/**
 * Pod → SLURM job: the batch script (init containers in order, sidecars started first, then
 * every container as its own job step with `srun --overlap`), one launcher script per container
 * (its env, working directory and command), and the job's sbatch options (resources, time limit,
 * partition, account, QoS, allowlisted annotations). Pure: nothing here touches the disk.
 *
 * The batch script records what the provider reads back from the pod directory: per container
 * and run, `state/NAME.RUN.started` (epoch ms), `state/NAME.RUN.step` (its SLURM step ID, for
 * sstat) and `state/NAME.RUN.exit` ("code epoch-ms"); a container with `stdin: true` reads
 * `stdin/NAME.RUN` (what attach sessions append) until `stdin/NAME.RUN.closed` appears; and
 * its output, each line prefixed by its epoch time in microseconds, in `logs/NAME.RUN.log`. It
 * needs bash 5 on the compute nodes (`$EPOCHREALTIME`: no process per line).
 * @module
 */
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError, isSidecar } from "../../../provider/mod.ts";
import type { SlurmConfig } from "../config.ts";
import { apptainerLines } from "./apptainer.ts";
import { tunnelEnvLines, tunnelHostsLines } from "./tunnel_agent.ts";
import { interlinkRequest } from "./interlink_annotations.ts";
import { DNS_LABEL, isDnsSubdomain } from "../ownership/job_comment.ts";
import { mainContainer, stepLayoutArgs, type TaskLayout } from "./tasks.ts";

/** Quotes `text` for sh. */
export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * The pod's directory name under the shared directory: one path component, whatever the pod's
 * metadata says — a namespace that is a DNS-1123 label, a name that is a DNS-1123 subdomain, a
 * uid of letters, digits and dashes (the apiserver's are UUIDs) — or an InvalidInputError.
 */
export function podDirName(pod: Pod): string {
  const { namespace = "", name = "", uid = "" } = pod.metadata ?? {};
  if (!DNS_LABEL.test(namespace) || !isDnsSubdomain(name) || !/^[A-Za-z0-9-]{1,64}$/.test(uid)) {
    throw new InvalidInputError(
      `pod ${JSON.stringify(`${namespace}/${name}`)} with uid ${
        JSON.stringify(uid)
      } cannot name a directory under sharedDir: a namespace must be a DNS-1123 label, a name a DNS-1123 subdomain and a uid letters, digits and dashes`,
    );
  }
  return `${namespace}_${name}_${uid}`;
}

/** The volume's env var for a runtime without mounts: `VKUBELET_VOLUME_<NAME>`. */
export function volumeEnvName(volume: string): string {
  return `VKUBELET_VOLUME_${volume.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`;
}

/** The launcher script of one container: env, working directory, then its command. */
export function launcherScript(
  pod: Pod,
  container: Container,
  podDir: string,
  config: SlurmConfig,
): string {
  const argv = containerArgv(container, config);
  const lines = [
    "#!/bin/sh",
    // From the batch script: the file for the step's ID (sstat reads the step), by task 0.
    '[ -z "$1" ] || [ "${SLURM_PROCID:-0}" != 0 ] || echo "$SLURM_STEP_ID" > "$1"',
    "exec 2>&1",
    `export HOSTNAME=${shellQuote(pod.metadata?.name ?? "")}`,
  ];
  lines.push(`export HOME=${shellQuote(`${podDir}/home`)}`);
  const volumes = volumePaths(pod, container, podDir, config);
  for (const [name, path] of Object.entries(volumes.env)) {
    lines.push(`export ${name}=${shellQuote(path)}`);
  }
  for (const e of container.env ?? []) {
    if (e.value === undefined || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(e.name)) continue;
    lines.push(`export ${e.name}=${shellQuote(e.value)}`);
  }
  const interlink = interlinkRequest(pod, config);
  // slurm-job.vk.io/mpi-flags (interLink's): mpiexec over the job's tasks runs the container.
  const mpi = interlink.mpiFlags
    ? `mpiexec -np "$VK_JOB_NTASKS" ${interlink.mpiFlags.map(shellQuote).join(" ")} `
    : "";
  if (config.runtime === "apptainer") {
    const hasCommand = container.command !== undefined ||
      imageCommand(container, config) !== undefined;
    lines.push(...apptainerLines(container, config, {
      podDir,
      argv,
      hasCommand,
      binds: volumes.binds,
      interlink,
      mpi,
    }, shellQuote));
  } else {
    lines.push(...tunnelEnvLines(podDir), ...tunnelHostsLines(podDir));
    lines.push(`cd ${shellQuote(container.workingDir ?? `${podDir}/home`)} || exit 1`);
    lines.push(`exec ${mpi}${argv.map(shellQuote).join(" ")}`);
  }
  return lines.join("\n") + "\n";
}

/** The container's argv: `command` + `args`, or the config's command for its image. */
function containerArgv(container: Container, config: SlurmConfig): string[] {
  const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value ?? ""]));
  const expand = (t: string) =>
    t.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (m, n) => m === "$$" ? "$" : env[n] ?? m);
  const base = container.command ?? imageCommand(container, config);
  if (!base && config.runtime === "none") {
    throw new InvalidInputError(
      `container ${container.name}: image ${container.image} has no command in the provider config; set command in the pod spec, or map the image under imageCommands`,
    );
  }
  return [...(base ?? []), ...(container.args ?? [])].map(expand);
}

/** The config's command for the container's image (with or without its tag), or undefined. */
function imageCommand(container: Container, config: SlurmConfig): string[] | undefined {
  const bare = (container.image ?? "").replace(/@.*$/, "").replace(/:[^:/]+$/, "");
  return config.imageCommands[container.image ?? ""] ?? config.imageCommands[bare];
}

/**
 * Where each mounted volume is: env vars (runtime none) and binds (apptainer). A hostPath volume
 * is its own path on the node (checked by {@link hostPathOf}); the others are in the pod directory.
 */
function volumePaths(pod: Pod, container: Container, podDir: string, config: SlurmConfig) {
  const env: Record<string, string> = {};
  const binds: [string, string, boolean][] = [];
  const volumes = new Map((pod.spec?.volumes ?? []).map((v) => [v.name, v]));
  for (const m of container.volumeMounts ?? []) {
    const volume = volumes.get(m.name);
    const host = volume ? hostPathOf(volume, config) : undefined;
    const base = host ?? `${podDir}/volumes/${m.name}`;
    const source = `${base}${m.subPath ? `/${m.subPath}` : ""}`;
    if (
      host !== undefined && config.runtime === "none" && m.mountPath.replace(/\/+$/, "") !== source
    ) {
      throw new InvalidInputError(
        `container ${container.name}: volume ${m.name} is mounted at ${m.mountPath}, but with runtime none a container reaches a hostPath only at its own path; set mountPath to ${source}`,
      );
    }
    env[volumeEnvName(m.name)] = source;
    binds.push([source, m.mountPath, m.readOnly === true]);
  }
  return { env, binds };
}

/**
 * A hostPath volume's path when it is one of the config's `hostPaths` or under one (a shared
 * filesystem every node mounts at the same path, such as /scratch); undefined for another kind
 * of volume. Any other path is refused, naming the key: a compute node's own paths are not the
 * pod's to reach.
 */
export function hostPathOf(
  volume: { name: string; hostPath?: { path: string } },
  config: SlurmConfig,
): string | undefined {
  if (!volume.hostPath) return undefined;
  const path = volume.hostPath.path.replace(/\/+$/, "") || "/";
  const clean = path.startsWith("/") && !path.split("/").some((p) => p === ".." || p === ".");
  const under = config.hostPaths.some((prefix) => {
    const p = prefix.replace(/\/+$/, "");
    return path === p || path.startsWith(`${p}/`);
  });
  if (!clean || !under) {
    throw new InvalidInputError(
      `volume ${volume.name}: hostPath ${volume.hostPath.path} is not under a path the slurm provider config shares with the nodes (hostPaths: ${
        config.hostPaths.length ? config.hostPaths.join(", ") : "none"
      }); add its shared filesystem to hostPaths in the provider config, or use another volume`,
    );
  }
  return path;
}

/**
 * `step`'s arguments: the container's name, `stdin` when it keeps its stdin open (else `-`), and
 * its srun layout (one task on one node but for the main container).
 */
function stepArgs(c: Container, layout: string[] = ["--nodes=1", "--ntasks=1"]): string {
  return [c.name, c.stdin ? "stdin" : "-", ...layout].map(shellQuote).join(" ");
}

/** The batch script for one run (submission) of the pod. */
export function batchScript(
  pod: Pod,
  podDir: string,
  run: number,
  layout: TaskLayout = {},
): string {
  const init = pod.spec?.initContainers ?? [];
  const lines = [
    "#!/bin/bash",
    "umask 077",
    // sbatch --export=NONE leaves the script without PATH and sets SLURM_EXPORT_ENV=NONE, which
    // srun would take over for its steps.
    'export PATH="${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}"',
    "unset SLURM_EXPORT_ENV",
    // The job's task count, for mpiexec in a step (where srun sets SLURM_NTASKS to the step's).
    'export VK_JOB_NTASKS="${SLURM_NTASKS:-1}"',
    `D=${shellQuote(podDir)}; R=${run}`,
    // No process for a time: `$EPOCHREALTIME` (bash 5) without its decimal point, to the ms.
    'ms() { local t=${EPOCHREALTIME/[.,]/}; echo "${t:0:13}"; }',
    'stamp() { while IFS= read -r l || [ -n "$l" ]; do printf \'%s %s\\n\' "$EPOCHREALTIME" "$l"; done; }',
    // A container's stdin (`stdin: true`): the file vkubelet appends attach sessions' input to,
    // passed on by tail until `.closed` appears (stdinOnce) or the step has exited. A file, not
    // a FIFO: a FIFO on a shared filesystem carries no data between hosts, and nothing blocks
    // when nobody attaches.
    "feed() {",
    '  local f="$D/stdin/$1.$R"; : >> "$f"',
    '  ( while [ ! -e "$f.closed" ] && [ ! -e "$D/state/$1.$R.exit" ]; do sleep 0.2; done ) &',
    '  tail -c +1 -f -s 0.2 --pid=$! "$f" 2>/dev/null',
    "}",
    // One bash process per container at most, none for the last: srun is forked straight from
    // the step (no function or compound command around it in the pipeline), and `lastpipe`
    // stamps the output in the step's own shell. The launcher writes the step ID (for sstat).
    "shopt -s lastpipe",
    "step() {",
    '  ms > "$D/state/$1.$R.started"',
    '  local c=("$D/c/$1.sh" "$D/state/$1.$R.step") log="$D/logs/$1.$R.log"',
    '  if [ "$2" = stdin ]; then',
    '    srun --overlap "${@:3}" "${c[@]}" < <(feed "$1") | stamp >> "$log"',
    "  else",
    '    srun --overlap "${@:3}" "${c[@]}" < /dev/null | stamp >> "$log"',
    "  fi",
    "  local rc=${PIPESTATUS[0]} t=${EPOCHREALTIME/[.,]/}",
    '  echo "$rc ${t:0:13}" > "$D/state/$1.$R.exit"',
    "  return $rc",
    "}",
    "sidecars=()",
  ];
  for (const c of init) {
    if (isSidecar(c)) {
      lines.push(`step ${stepArgs(c)} & sidecars+=($!)`);
    } else {
      lines.push(`step ${stepArgs(c)} || exit $?`);
    }
  }
  lines.push("mains=()");
  const main = mainContainer(pod);
  const containers = pod.spec?.containers ?? [];
  containers.forEach((c, i) => {
    const args = stepArgs(c, c === main ? stepLayoutArgs(layout) : undefined);
    // The last container runs in the batch shell itself: a one-container pod forks no shell.
    lines.push(
      i === containers.length - 1 ? `step ${args}; last=$?` : `step ${args} & mains+=($!)`,
    );
  });
  lines.push(
    "rc=0",
    'for p in "${mains[@]}"; do wait "$p" || { s=$?; [ $rc -eq 0 ] && rc=$s; }; done',
    "[ $rc -eq 0 ] && rc=${last:-0}",
    // Sidecars still running end with the job: slurmd stops every step of a finished job.
    "exit $rc",
  );
  return lines.join("\n") + "\n";
}
