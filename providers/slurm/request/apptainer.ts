/**
 * `runtime: apptainer`: the launcher lines that run a container in an apptainer instance, and the
 * command `kubectl exec` runs in the same instance. Pure: nothing here touches the disk.
 *
 * - The container runs in a named instance (`vk-<job>-<container>-<task>`), started with the
 *   image, its binds and options, and stopped when the container ends; its process runs with
 *   `apptainer run instance://…` when the pod gives no command (the image's runscript, its
 *   entrypoint, with the pod's args), as the kubelet uses the image's entrypoint, else
 *   `apptainer exec instance://… command args`. `kubectl exec` is `apptainer exec` into it.
 * - The pod's env reaches the container: no `--cleanenv`, and each variable also as
 *   `APPTAINERENV_<NAME>`, so that it wins over the image's own (the kubelet's order).
 * - The image as the pod gives it: with a scheme (`docker://`, `oras://`) or an absolute path (a
 *   `.sif` file or a sandbox directory) as is, else behind `imagePrefix` (or interLink's
 *   `image-root`).
 * - `--nv` when the container asks for `nvidia.com/gpu`, `--rocm` for `amd.com/gpu`; volumes as
 *   `--bind source:mountPath[:ro]`; `HOME` the pod's home directory (`--home`).
 * @module
 */
import type { Container } from "kubernetes-types/core/v1.d.ts";
import type { SlurmConfig } from "../config.ts";
import type { InterlinkRequest } from "./interlink_annotations.ts";
import { tunnelEnvLines } from "./tunnel_agent.ts";

/** The instance's name in a launcher or exec shell (`$SLURM_JOB_ID` and the task expand there). */
export function instanceName(container: string, task = "${SLURM_PROCID:-0}"): string {
  return `"vk-$SLURM_JOB_ID-"'${container}'"-${task}"`;
}

/** What the launcher lines need besides the pod and container. */
export interface ApptainerLaunch {
  podDir: string;
  argv: string[];
  /** Whether argv is a command (`exec`) or only the image's runscript's args (`run`). */
  hasCommand: boolean;
  binds: [string, string, boolean][];
  interlink: InterlinkRequest;
  /** `mpiexec -np … ` before the apptainer command, or "". */
  mpi: string;
}

/** The image reference apptainer is given; see the module doc. */
export function imageRef(image: string, prefix: string): string {
  if (image.startsWith("/") || /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(image)) return image;
  return `${prefix}${image}`;
}

/** The launcher's lines after its exports: env for apptainer, then the instance's life. */
export function apptainerLines(
  container: Container,
  config: SlurmConfig,
  launch: ApptainerLaunch,
  quote: (text: string) => string,
): string[] {
  const q = (args: string[]) => args.map(quote).join(" ");
  const lines: string[] = [];
  for (const e of container.env ?? []) {
    if (e.value === undefined || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(e.name)) continue;
    lines.push(`export APPTAINERENV_${e.name}=${quote(e.value)}`);
  }
  lines.push(...tunnelEnvLines(launch.podDir)); // the tunnel's Service addresses and hosts
  const bin = config.apptainerBin;
  const start = [
    "instance",
    "start",
    ...gpuFlags(container),
    "--home",
    `${launch.podDir}/home`,
    ...launch.binds.flatMap(([from, to, ro]) => ["--bind", `${from}:${to}${ro ? ":ro" : ""}`]),
    ...launch.interlink.binds.flatMap((b) => ["--bind", b]),
    ...launch.interlink.apptainerOptions,
    imageRef(container.image ?? "", launch.interlink.imageRoot ?? config.imagePrefix),
  ];
  const pwd = container.workingDir ? ["--pwd", container.workingDir] : [];
  const verb = launch.hasCommand ? "exec" : "run";
  lines.push(
    `I=${instanceName(container.name)}`,
    `${quote(bin)} -q ${q(start)} "$I" >/dev/null || exit 125`,
    // The instance outlives its starter (a daemon, out of reach of proctrack/linuxproc): stop it
    // whichever way the container ends; on a signal at once (-F), before slurmstepd's KillWait,
    // and by its PID when its record in HOME is gone (vkubelet removes the pod's directory as
    // soon as it has cancelled the job).
    `P=$(${
      quote(bin)
    } instance list --json "$I" 2>/dev/null | sed -n 's/.*"pid": *\\([0-9]*\\).*/\\1/p')`,
    `stop() { ${
      quote(bin)
    } -q instance stop "$@" "$I" >/dev/null 2>&1 || kill -9 $P 2>/dev/null; }`,
    "trap stop EXIT",
    "trap 'stop -F; trap - EXIT; exit 143' TERM",
    "trap 'stop -F; trap - EXIT; exit 130' INT",
    `${launch.mpi}${quote(bin)} ${q([verb, ...pwd])} "instance://$I" ${q(launch.argv)}`,
    "exit $?",
  );
  return lines;
}

/** `--nv` for NVIDIA GPUs, `--rocm` for AMD ones, when the container asks for them. */
function gpuFlags(container: Container): string[] {
  const asks = (name: string) =>
    [container.resources?.limits?.[name], container.resources?.requests?.[name]]
      .some((v) => v !== undefined && String(v) !== "0");
  return [...(asks("nvidia.com/gpu") ? ["--nv"] : []), ...(asks("amd.com/gpu") ? ["--rocm"] : [])];
}

/** The shell `kubectl exec` runs in the job: into the container's instance on task 0's node. */
export function apptainerExecShell(config: SlurmConfig, container: string): string {
  const bin = `'${config.apptainerBin.replaceAll("'", "'\\''")}'`;
  return `exec ${bin} -q exec "instance://"${instanceName(container, "0")} "$@"`;
}
