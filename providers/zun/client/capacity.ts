/**
 * The zun node's capacity as Zun tells it: the hosts' sum (admins see them), else the project's
 * quota limits; undefined when neither answers (the config's capacity then).
 * @module
 */
import type { ZunApi } from "./zun_api.ts";

interface Host {
  cpus?: number;
  mem_total?: number;
}

/** Capacity from Zun: the hosts' sum (admins see them), else the project's quota limits. */
export async function zunCapacity(
  api: ZunApi,
  signal?: AbortSignal,
): Promise<{ cpu?: number; memoryMiB?: number; pods?: number; from: string } | undefined> {
  try {
    const { body } = await api.call<{ hosts: Host[] }>("GET", "/hosts", { signal });
    if (body.hosts.length) {
      return {
        cpu: body.hosts.reduce((n, h) => n + (h.cpus ?? 0), 0),
        memoryMiB: body.hosts.reduce((n, h) => n + (h.mem_total ?? 0), 0),
        from: `${body.hosts.length} Zun host(s)`,
      };
    }
  } catch {
    // not an admin: the project's quotas next
  }
  const project = await api.projectId(signal);
  if (!project) return undefined;
  const { body } = await api.call<{ containers?: number; cpu?: number; memory?: number }>(
    "GET",
    `/quotas/${project}`,
    { signal },
  );
  const limit = (n?: number) => n !== undefined && n >= 0 ? n : undefined;
  return {
    cpu: limit(body.cpu),
    memoryMiB: limit(body.memory),
    pods: limit(body.containers),
    from: `project ${project}'s quotas`,
  };
}

/** The node's capacity: what Zun told ({@link zunCapacity}), else the config's. */
export function nodeCapacity(
  found: Awaited<ReturnType<typeof zunCapacity>>,
  config: { cpu: string; memory: string; pods: string },
): { cpu: string; memory: string; pods: string } {
  return {
    cpu: found?.cpu !== undefined ? String(found.cpu) : config.cpu,
    memory: found?.memoryMiB !== undefined ? `${found.memoryMiB}Mi` : config.memory,
    pods: found?.pods !== undefined ? String(found.pods) : config.pods,
  };
}
