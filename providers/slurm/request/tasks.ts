/**
 * The pod's task layout, for MPI and multi-node work: `--nodes`, `--ntasks`, `--ntasks-per-node`
 * and `--mpi` from the config's `tasks` defaults and the pod's `slurm.vkubelet.io/nodes`,
 * `…/ntasks`, `…/ntasks-per-node` and `…/mpi` annotations. The allocation (sbatch) gets the
 * counts; the main container's step (`srun`) gets all four, so that one container runs as N tasks
 * across the job's nodes; every other container stays one task on one node.
 * @module
 */
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError } from "../../../provider/mod.ts";
import { ANNOTATION_PREFIX, type SlurmConfig } from "../config.ts";

/** The layout options pods may always set by annotation: counts and an MPI plugin name. */
export const TASK_OPTIONS = ["nodes", "ntasks", "ntasks-per-node", "mpi"] as const;

type TaskOption = typeof TASK_OPTIONS[number];

/** The layout: option → value, as sbatch and srun spell them. */
export type TaskLayout = Partial<Record<TaskOption, string>>;

/** The annotation kubectl reads for the default container: the main one here too. */
const DEFAULT_CONTAINER = "kubectl.kubernetes.io/default-container";

/** The pod's layout: the config's defaults, then its annotations (each checked). */
export function taskLayout(pod: Pod, config: SlurmConfig): TaskLayout {
  const layout: TaskLayout = {};
  const defaults = config.tasks;
  if (defaults.nodes !== undefined) layout.nodes = String(defaults.nodes);
  if (defaults.ntasks !== undefined) layout.ntasks = String(defaults.ntasks);
  if (defaults.ntasksPerNode !== undefined) {
    layout["ntasks-per-node"] = String(defaults.ntasksPerNode);
  }
  if (defaults.mpi !== undefined) layout.mpi = defaults.mpi;
  const annotations = pod.metadata?.annotations ?? {};
  for (const option of TASK_OPTIONS) {
    const value = annotations[`${ANNOTATION_PREFIX}${option}`];
    if (value === undefined) continue;
    const valid = option === "mpi" ? /^[a-z][a-z0-9_]*$/.test(value) : /^[1-9]\d{0,5}$/.test(value);
    if (!valid) {
      throw new InvalidInputError(
        `annotation ${ANNOTATION_PREFIX}${option}: ${JSON.stringify(value)} is not ${
          option === "mpi" ? "an MPI plugin name such as pmi2 or none" : "a positive count"
        }`,
      );
    }
    layout[option] = value;
  }
  return layout;
}

/** The allocation's options: the counts (sbatch has no `--mpi`). */
export function allocationOptions(layout: TaskLayout): Record<string, string> {
  const { mpi: _, ...counts } = layout;
  return counts as Record<string, string>;
}

/** The container that runs as the layout's tasks: kubectl's default container, else the first. */
export function mainContainer(pod: Pod): Container | undefined {
  const containers = pod.spec?.containers ?? [];
  const named = pod.metadata?.annotations?.[DEFAULT_CONTAINER];
  return containers.find((c) => c.name === named) ?? containers[0];
}

/** srun's layout arguments for the main container's step. */
export function stepLayoutArgs(layout: TaskLayout): string[] {
  const args = [`--nodes=${layout.nodes ?? 1}`, `--ntasks=${layout.ntasks ?? 1}`];
  if (layout["ntasks-per-node"]) args.push(`--ntasks-per-node=${layout["ntasks-per-node"]}`);
  if (layout.mpi) args.push(`--mpi=${layout.mpi}`);
  return args;
}
