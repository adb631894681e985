/**
 * Init containers as ECS runs them: each a non-essential container that must exit 0 (`dependsOn`
 * condition `SUCCESS`) before the next starts, the last before every app container — the
 * kubelet's order (kubernetes/kubernetes pkg/kubelet/kuberuntime/kuberuntime_manager.go
 * `computeInitContainerActions`: one at a time, each to success, before the regular containers).
 * A failed one never satisfies its dependents, so ECS stops the task without starting the app
 * containers, and the kit's restart machinery (provider/restart.ts) restarts the pod's task or
 * fails the pod by its restart policy. `COMPLETE` (any exit code) is not used: the kubelet goes on
 * only after a success.
 * @module
 */
import type { ContainerDefinition } from "@aws-sdk/client-ecs";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError, isSidecar } from "../../../provider/mod.ts";

/** Refuses init containers ECS cannot run as the kubelet does: sidecars, which restart alone. */
export function checkInitContainers(pod: Pod): void {
  (pod.spec?.initContainers ?? []).forEach((c, i) => {
    if (isSidecar(c)) {
      throw new InvalidInputError(
        `spec.initContainers[${i}].restartPolicy: the sidecar ${c.name} (restartPolicy: Always) ` +
          "cannot run on Fargate, where a task's containers are not restarted one by one; " +
          "make it a regular container of the pod; Fargate cannot run this pod as written",
      );
    }
  });
}

/**
 * The task's containers in order: `first` (vkubelet's own set-up containers) and the init
 * containers, each non-essential and started after the one before succeeded, then the app
 * containers, after the last of those.
 */
export function orderContainers(
  first: ContainerDefinition[],
  inits: ContainerDefinition[],
  apps: ContainerDefinition[],
): ContainerDefinition[] {
  const chain = [...first, ...inits];
  const ordered = chain.map((def, i): ContainerDefinition => ({
    ...def,
    essential: false,
    dependsOn: i === 0 ? undefined : [{ containerName: chain[i - 1].name, condition: "SUCCESS" }],
  }));
  const last = chain.at(-1)?.name;
  return [
    ...ordered,
    ...apps.map((def) =>
      last ? { ...def, dependsOn: [{ containerName: last, condition: "SUCCESS" as const }] } : def
    ),
  ];
}
