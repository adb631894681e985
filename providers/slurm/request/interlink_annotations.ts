/**
 * The `slurm-job.vk.io/*` annotations interLink's SLURM plugin reads
 * (github.com/interlink-hq/interlink-slurm-plugin, pkg/slurm/prepare.go), taken with the same
 * meaning so that manifests written for interLink run here, and through the same allowlist as
 * our own `slurm.vkubelet.io/<option>` annotations: an sbatch option in `flags` must be in
 * `podAnnotations` (or be a task count), so one that decides what runs or as whom (`--uid`,
 * `--export`, `--chdir`, `--output`…) stays refused. The plugin's references are to that file.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError } from "../../../provider/mod.ts";
import type { SlurmConfig } from "../config.ts";
import { hostPathOf } from "./script.ts";
import { TASK_OPTIONS } from "./tasks.ts";

/** interLink's annotation prefix. */
export const INTERLINK_PREFIX = "slurm-job.vk.io/";

/** What a pod's interLink annotations ask for. */
export interface InterlinkRequest {
  /** sbatch options, from `flavor` then `flags`. */
  options: Record<string, string>;
  /** `mpi-flags`: every container's command runs under `mpiexec -np $SLURM_NTASKS <flags>`. */
  mpiFlags?: string[];
  /** `image-root`: the prefix for an image without a scheme or an absolute path. */
  imageRoot?: string;
  /** `singularity-options`: apptainer options (checked against {@link APPTAINER_OPTIONS}). */
  apptainerOptions: string[];
  /** `singularity-mounts`: binds, each source under the config's `hostPaths`. */
  binds: string[];
}

/** interLink's short sbatch flags (`slurmFlagAliases`, prepare.go:259-272). */
const SHORT_FLAGS: Record<string, string> = {
  A: "account",
  C: "constraint",
  D: "chdir",
  G: "gpus",
  J: "job-name",
  N: "nodes",
  c: "cpus-per-task",
  n: "ntasks",
  o: "output",
  p: "partition",
  t: "time",
  w: "nodelist",
};

/**
 * apptainer options a pod may give in `singularity-options`: devices, isolation and env. Not
 * `--fakeroot`, `--userns`, `--add-caps`, `--security`, `--keep-privs`, `--overlay`, `--bind`
 * (binds go through `singularity-mounts` and `hostPaths`) or anything else: they change who the
 * container is or what it reaches.
 */
export const APPTAINER_OPTIONS: Record<string, "flag" | "value"> = {
  "--nv": "flag",
  "--nvccli": "flag",
  "--rocm": "flag",
  "--contain": "flag",
  "--containall": "flag",
  "--cleanenv": "flag",
  "--writable-tmpfs": "flag",
  "--no-home": "flag",
  "--no-init": "flag",
  "--no-privs": "flag",
  "--ipc": "flag",
  "--pid": "flag",
  "--compat": "flag",
  "--env": "value",
  "--no-mount": "value",
  "--pwd": "value",
};

/** The pod's interLink annotations, checked; each problem names the annotation and the fix. */
export function interlinkRequest(pod: Pod, config: SlurmConfig): InterlinkRequest {
  const a = (name: string) => pod.metadata?.annotations?.[`${INTERLINK_PREFIX}${name}`];
  const request: InterlinkRequest = { options: {}, apptainerOptions: [], binds: [] };
  for (const key of Object.keys(pod.metadata?.annotations ?? {})) {
    if (!key.startsWith(INTERLINK_PREFIX)) continue;
    const name = key.slice(INTERLINK_PREFIX.length);
    if (!KNOWN.includes(name)) {
      throw new InvalidInputError(
        `annotation ${key}: interLink's SLURM plugin reads no such annotation and neither does the slurm provider; remove it (see the provider README's table)`,
      );
    }
  }
  const flavor = a("flavor");
  if (flavor !== undefined) {
    // prepare.go:415: a named flavor's flags come first; an unknown one falls back there, is an
    // error here (the pod would run on a flavor it did not ask for).
    const chosen = config.flavors[flavor];
    if (!chosen) {
      throw new InvalidInputError(
        `annotation ${INTERLINK_PREFIX}flavor: the slurm provider config has no flavor ${flavor} (flavors: ${
          Object.keys(config.flavors).join(", ") || "none"
        }); add it under flavors or remove the annotation`,
      );
    }
    Object.assign(request.options, chosen);
  }
  const flags = a("flags");
  if (flags !== undefined) Object.assign(request.options, sbatchFlags(flags, pod, config));
  const mpi = a("mpi-flags");
  // prepare.go:1093: "true" alone adds nothing; anything else is mpiexec's flags.
  if (mpi !== undefined && mpi !== "true") request.mpiFlags = mpi.split(" ").filter(Boolean);
  if (a("singularity-commands") !== undefined) {
    throw new InvalidInputError(
      `annotation ${INTERLINK_PREFIX}singularity-commands: commands added to the container runtime's command line (interLink's README; its plugin's code reads it nowhere) are not run by the slurm provider; put them in the container's command`,
    );
  }
  if (a("pre-exec") !== undefined) {
    throw new InvalidInputError(
      `annotation ${INTERLINK_PREFIX}pre-exec: shell commands in the batch script, outside every container, are not run by the slurm provider; put them in an init container`,
    );
  }
  for (const enroot of ["enroot-mounts", "enroot-options"]) {
    if (a(enroot) !== undefined) {
      throw new InvalidInputError(
        `annotation ${INTERLINK_PREFIX}${enroot}: the slurm provider has no enroot runtime (runtime: none or apptainer); remove it`,
      );
    }
  }
  request.imageRoot = a("image-root");
  const options = a("singularity-options");
  const mounts = a("singularity-mounts");
  if ((options !== undefined || mounts !== undefined) && config.runtime !== "apptainer") {
    throw new InvalidInputError(
      `annotations ${INTERLINK_PREFIX}singularity-options and -mounts need runtime: apptainer in the slurm provider config (this node runs commands without a container); remove them`,
    );
  }
  if (options !== undefined) request.apptainerOptions = apptainerOptions(options);
  if (mounts !== undefined) request.binds = apptainerBinds(mounts, config);
  return request;
}

const KNOWN = [
  "flavor",
  "flags",
  "mpi-flags",
  "pre-exec",
  "singularity-mounts",
  "singularity-options",
  "singularity-commands",
  "enroot-mounts",
  "enroot-options",
  "image-root",
];

/**
 * `flags` (prepare.go:1071): sbatch flags split as a shell would (`splitSlurmFlags`), each
 * through the allowlist; `--cpus-per-task` and `--mem` only when the pod sets no cpu or memory,
 * as there.
 */
function sbatchFlags(text: string, pod: Pod, config: SlurmConfig): Record<string, string> {
  const options: Record<string, string> = {};
  const words = shellWords(text);
  const sets = (r: string) =>
    (pod.spec?.containers ?? []).some((c) =>
      c.resources?.limits?.[r] !== undefined || c.resources?.requests?.[r] !== undefined
    );
  for (let i = 0; i < words.length; i++) {
    const word = words[i];
    const m = /^--([a-z][a-z0-9-]*)(?:=(.*))?$/s.exec(word) ?? /^-([A-Za-z])(.*)$/s.exec(word);
    if (!m) {
      throw new InvalidInputError(
        `annotation ${INTERLINK_PREFIX}flags: ${JSON.stringify(word)} is not an sbatch flag`,
      );
    }
    const option = word.startsWith("--") ? m[1] : SHORT_FLAGS[m[1]] ?? `-${m[1]}`;
    let value = m[2] || undefined;
    while (value === undefined && i + 1 < words.length && !words[i + 1].startsWith("-")) {
      value = words[++i];
    }
    if (
      !config.podAnnotations.includes(option) &&
      !(TASK_OPTIONS as readonly string[]).includes(option)
    ) {
      throw new InvalidInputError(
        `annotation ${INTERLINK_PREFIX}flags: the slurm provider config does not let pods set ${
          option.startsWith("-") ? option : `--${option}`
        }; remove it or add ${option} to podAnnotations in the provider config (never possible for options that decide what runs or as whom)`,
      );
    }
    if (option === "cpus-per-task" && sets("cpu")) continue;
    if (option === "mem" && sets("memory")) continue;
    options[option] = value ?? "";
  }
  return options;
}

/** `singularity-options`, each one from {@link APPTAINER_OPTIONS}. */
function apptainerOptions(text: string): string[] {
  const words = shellWords(text);
  const out: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const [name, inline] = words[i].split(/=(.*)/s);
    const kind = APPTAINER_OPTIONS[name];
    if (!kind) {
      throw new InvalidInputError(
        `annotation ${INTERLINK_PREFIX}singularity-options: ${name} is not allowed (allowed: ${
          Object.keys(APPTAINER_OPTIONS).join(" ")
        }); mounts go in ${INTERLINK_PREFIX}singularity-mounts`,
      );
    }
    if (kind === "flag") out.push(name);
    else if (inline !== undefined) out.push(`${name}=${inline}`);
    else if (i + 1 < words.length) out.push(name, words[++i]);
  }
  return out;
}

/** `singularity-mounts`: `--bind src[:dst[:opts]]` (or `-B`, comma lists), sources checked. */
function apptainerBinds(text: string, config: SlurmConfig): string[] {
  const words = shellWords(text);
  const binds: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const [flag, inline] = words[i].split(/=(.*)/s);
    const spec = flag === "--bind" || flag === "-B" ? inline ?? words[++i] : undefined;
    if (spec === undefined) {
      throw new InvalidInputError(
        `annotation ${INTERLINK_PREFIX}singularity-mounts: expected --bind src[:dst[:ro]], got ${
          JSON.stringify(words[i])
        }`,
      );
    }
    for (const one of spec.split(",")) {
      const [source, target = source, mode] = one.split(":");
      hostPathOf(
        { name: `${INTERLINK_PREFIX}singularity-mounts`, hostPath: { path: source } },
        config,
      );
      if (mode !== undefined && mode !== "ro" && mode !== "rw") {
        throw new InvalidInputError(
          `annotation ${INTERLINK_PREFIX}singularity-mounts: bind option ${mode} is not ro or rw`,
        );
      }
      binds.push(`${source}:${target}${mode ? `:${mode}` : ""}`);
    }
  }
  return binds;
}

/** Words as a shell splits them: quotes and backslashes, no expansion (`splitShellWords`). */
export function shellWords(text: string): string[] {
  const words: string[] = [];
  let word = "";
  let started = false;
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quote === "'" ? ch === "'" : quote === '"' ? ch === '"' : ch === "'" || ch === '"') {
      quote = quote ? undefined : ch as "'" | '"';
      started = true;
    } else if (ch === "\\" && quote !== "'" && i + 1 < text.length) {
      word += text[++i];
      started = true;
    } else if (!quote && /\s/.test(ch)) {
      if (started) words.push(word);
      word = "";
      started = false;
    } else {
      word += ch;
      started = true;
    }
  }
  if (started) words.push(word);
  return words;
}
