/**
 * Pod conditions of vkubelet's own (`vkubelet.io/...`) that say where the host falls short of
 * what the pod asked: volumes not at their mountPath without a mount namespace, resource limits
 * reported but not enforced without usable cgroups (v2, or v1 memory and cpu hierarchies).
 * @module
 */
import type { PodCondition } from "kubernetes-types/core/v1.d.ts";
import { formatTime } from "../../../provider/mod.ts";
import { type CgroupSupport, hasLimits } from "../host/cgroups.ts";
import type { ProcessConfig } from "../config.ts";
import { allContainers } from "../launch/container_spec.ts";
import type { PodRecord } from "../state/state.ts";

/** What the host offers, as probed at start-up. */
export interface HostSupport {
  config: Pick<ProcessConfig, "mountNamespace">;
  mountNamespace: { ok: boolean; reason?: string };
  cgroups: CgroupSupport;
}

/** The `vkubelet.io/...` conditions that apply to the pod on this host. */
export function hostConditions(record: PodRecord, host: HostSupport): PodCondition[] {
  const out: PodCondition[] = [];
  const containers = allContainers(record.pod);
  const at = formatTime(record.startTimeMs);
  if (
    containers.some((c) => c.volumeMounts?.length) &&
    host.config.mountNamespace !== "off" && !host.mountNamespace.ok
  ) {
    out.push({
      type: "vkubelet.io/VolumesAtMountPath",
      status: "False",
      reason: "NoMountNamespace",
      message:
        `volumes are not at their mountPath (${host.mountNamespace.reason}); containers find them through VKUBELET_VOLUME_<NAME> variables`,
      lastTransitionTime: at,
    });
  }
  if (containers.some(hasLimits) && !host.cgroups.ok) {
    out.push({
      type: "vkubelet.io/ResourceLimitsEnforced",
      status: "False",
      reason: "NoCgroups",
      message: `resource limits are reported, not enforced: ${host.cgroups.reason}`,
      lastTransitionTime: at,
    });
  }
  return out;
}
