/**
 * The floor's ACI backend: what a kubelet for ACI must ask of ACI for one pod, and no more — a
 * PUT of its container group (the request vkubelet's provider sends, built by the same code),
 * GETs every 500 ms until the container runs, and a DELETE that waits until the group is gone;
 * the same SDK and Prism in the path. Writes and reads share the floor's limiter.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { parseAciConfig } from "../../providers/aci/config.ts";
import { createAciClient } from "../../providers/aci/azure.ts";
import { AciGroups } from "../../providers/aci/client/groups.ts";
import { containerGroupFor } from "../../providers/aci/request/container_group.ts";
import { groupName } from "../../providers/aci/names.ts";
import { aciConfig } from "../../tools/harness/aci/env.ts";
import type { FloorBackend } from "./floor.ts";

/** Where the floor's ACI is. */
export interface AciFloorConfig {
  /** The ARM endpoint (Prism in front of the emulator). */
  endpoint: string;
  resourceGroup: string;
  nodeName: string;
}

/** Runs tasks a few at a time (the floor's limiter). */
interface Limit {
  run(task: () => Promise<void>): Promise<void>;
}

const READ_EVERY_MS = 500;

/** The floor's ACI calls for one pod; see the module doc. */
export function aciFloorBackend(floor: AciFloorConfig, limit: Limit): FloorBackend {
  const parsed = parseAciConfig(aciConfig(floor.endpoint, { resourceGroup: floor.resourceGroup }));
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const config = parsed.config;
  const groups = new AciGroups(createAciClient(config), config);
  const name = (pod: Pod) =>
    groupName(floor.nodeName, pod.metadata?.namespace ?? "", pod.metadata?.name ?? "");
  const limits = { maxCpu: 4, maxMemoryInGB: 16 };
  return {
    async run(pod) {
      const body = containerGroupFor(pod, config, {
        nodeName: floor.nodeName,
        restarts: 0,
        limits,
        volumes: [],
        credentials: [],
      });
      // A create throttled past the SDK's retries (ARM's write limit) is tried again a second on.
      for (let made = false; !made;) {
        await limit.run(() =>
          groups.create(name(pod), body).then(() => void (made = true), () => {})
        );
        if (!made) await new Promise((r) => setTimeout(r, 1000));
      }
      for (;;) {
        await new Promise((r) => setTimeout(r, READ_EVERY_MS));
        let running = false;
        await limit.run(async () => {
          // A read throttled past the SDK's retries is tried again at the next turn.
          const group = await groups.get(name(pod)).catch(() => undefined);
          running = group?.containers.every((c) =>
            c.instanceView?.currentState?.state === "Running"
          ) ?? false;
        });
        if (running) return;
      }
    },
    async remove(pod) {
      // A deletion throttled past the SDK's retries (ARM's delete limit) is tried again.
      for (let gone = false; !gone;) {
        await limit.run(() => groups.delete(name(pod)).then(() => void (gone = true), () => {}));
        if (!gone) await new Promise((r) => setTimeout(r, 1000));
      }
    },
  };
}
