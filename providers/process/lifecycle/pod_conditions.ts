/**
 * Conditions of vkubelet's own (`vkubelet.io/...`) that say where the host falls short of what
 * the pod asked: containers without their own view (refused, or run so because the config turned
 * isolation off), volumes not at their mountPath, resource limits reported but not enforced
 * without usable cgroups (v2, or v1 memory and cpu hierarchies). The node carries the first too.
 * @module
 */
import type { NodeCondition, PodCondition } from "kubernetes-types/core/v1.d.ts";
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
  const isolation = isolationCondition(host);
  if (isolation.status === "False") out.push({ ...isolation, lastTransitionTime: at });
  if (host.config.mountNamespace === "off" && containers.some((c) => c.volumeMounts?.length)) {
    out.push({
      type: "vkubelet.io/VolumesAtMountPath",
      status: "False",
      reason: "MountNamespaceOff",
      message:
        "volumes are not at their mountPath (mountNamespace is off); containers find them through VKUBELET_VOLUME_<NAME> variables",
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

/** Condition type saying whether containers get their own view (mount and PID namespaces). */
const ISOLATION_CONDITION = "vkubelet.io/ContainerIsolation";

/**
 * Whether containers on this host get their own view: True; False with reason `NoContainerView`
 * (the host cannot make one, so pods are refused) or `IsolationOff` (the config's choice).
 */
export function isolationCondition(
  host: Pick<HostSupport, "config" | "mountNamespace">,
): NodeCondition {
  const type = ISOLATION_CONDITION;
  if (host.config.mountNamespace === "off") {
    return {
      type,
      status: "False",
      reason: "IsolationOff",
      message:
        "mountNamespace is off: containers run without their own view or PID namespace and can read other pods' environment through /proc",
    };
  }
  if (!host.mountNamespace.ok) {
    return {
      type,
      status: "False",
      reason: "NoContainerView",
      message: `pods are refused: containers cannot get their own view here: ${
        host.mountNamespace.reason ?? "unknown reason"
      }`.slice(0, 1024),
    };
  }
  return {
    type,
    status: "True",
    reason: "ContainerViews",
    message: "each container runs in its own mount and PID namespaces",
  };
}
