/**
 * An ECI emulator for tests: an RPC endpoint on 127.0.0.1 that refuses any request straying from
 * Alibaba's published metadata (`./metadata.ts`; every refusal is also kept in `strays`, which
 * tests assert empty) and answers in the response shapes of Alibaba's API reference. Groups run
 * at once (status Running, container IPs from 127.20.0.0/16, data only); the containers' log is
 * what their `sh -c` script echoes; exec runs the command here and speaks the Kubernetes channel
 * protocol on the WebSocket URL it hands out. Test code: verified against Alibaba's published
 * API metadata, not against ECI.
 * @module
 */
import { loadOperations, validateRequest } from "./metadata.ts";
import { runExecSocket } from "./exec.ts";
import { type EmulatedGroup, groupBody, indexes, nanoTime } from "./shapes.ts";

export type { EmulatedGroup };

/** The emulator and what tests ask of it. */
export interface EciEmulator {
  /** `http://127.0.0.1:PORT` for the provider's `endpoint`. */
  endpoint: string;
  regionId: string;
  groups: Map<string, EmulatedGroup>;
  /** Requests refused for straying from the metadata, each with its problems. */
  strays: string[];
  /** Every action called, in order. */
  calls: string[];
  /** The next `n` requests answer `Throttling.User`. */
  throttle(n: number): void;
  /** Log lines written for a container (beyond what its script echoes). */
  writeLog(groupId: string, container: string, lines: string[]): void;
  stop(): Promise<void>;
}

const STATIC_ENV = {
  ALIBABA_CLOUD_ACCESS_KEY_ID: "LTAItestkey",
  ALIBABA_CLOUD_ACCESS_KEY_SECRET: "testsecret",
  ALIBABA_CLOUD_ECS_METADATA_DISABLED: "true",
};

/** Credentials for the SDK's default chain (environment first: nothing else is tried). */
export const ECI_TEST_ENV: Record<string, string> = STATIC_ENV;

/** Starts an emulator on a free loopback port. */
export function startEciEmulator(): Promise<EciEmulator> {
  const ops = loadOperations();
  const groups = new Map<string, EmulatedGroup>();
  const tokens = new Map<string, string>();
  const logs = new Map<string, { ms: number; line: string }[]>();
  const execs = new Map<string, { command: string[] }>();
  let throttled = 0, serial = 0;
  const emu = {
    endpoint: "",
    regionId: "cn-hangzhou",
    groups,
    strays: [] as string[],
    calls: [] as string[],
    throttle: (n: number) => void (throttled = n),
    writeLog(groupId: string, container: string, lines: string[]) {
      const key = `${groupId}/${container}`;
      const now = Date.now();
      logs.set(key, [...logs.get(key) ?? [], ...lines.map((line, i) => ({ ms: now + i, line }))]);
    },
    stop: async () => {},
  } satisfies EciEmulator;

  const answer = (body: unknown, status = 200) =>
    new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
  const fail = (status: number, code: string, message: string) =>
    answer({ RequestId: `req-${++serial}`, Code: code, Message: message }, status);

  const actions: Record<string, (q: URLSearchParams, url: URL) => Response> = {
    CreateContainerGroup(q) {
      const token = q.get("ClientToken");
      if (token && tokens.has(token)) {
        return answer({ RequestId: `req-${++serial}`, ContainerGroupId: tokens.get(token) });
      }
      const id = `eci-${crypto.randomUUID().replaceAll("-", "").slice(0, 20)}`;
      const n = ++serial;
      const containers = indexes(q, "Container").map((i) => ({
        name: q.get(`Container.${i}.Name`)!,
        image: q.get(`Container.${i}.Image`)!,
        script:
          indexes(q, `Container.${i}.Arg`).map((j) => q.get(`Container.${i}.Arg.${j}`)).join(" ") +
          " " +
          indexes(q, `Container.${i}.Command`).map((j) => q.get(`Container.${i}.Command.${j}`))
            .join(" "),
      }));
      groups.set(id, {
        id,
        name: q.get("ContainerGroupName")!,
        params: new Map(q),
        status: "Running",
        ip: `127.20.${(n >> 8) & 255}.${n & 255}`,
        createdMs: Date.now(),
        tags: indexes(q, "Tag").map((i) => ({
          Key: q.get(`Tag.${i}.Key`)!,
          Value: q.get(`Tag.${i}.Value`) ?? "",
        })),
        containers,
        initContainers: indexes(q, "InitContainer").map((i) => q.get(`InitContainer.${i}.Name`)!),
        restartPolicy: q.get("RestartPolicy") ?? "Always",
      });
      for (const c of containers) {
        const echoes = [...c.script.matchAll(/echo ([^;&|]+)/g)].map((m) => m[1].trim());
        if (echoes.length) emu.writeLog(id, c.name, echoes);
      }
      if (token) tokens.set(token, id);
      return answer({ RequestId: `req-${n}`, ContainerGroupId: id });
    },
    DescribeContainerGroups(q) {
      let list = [...groups.values()];
      const ids = q.get("ContainerGroupIds");
      if (ids) list = list.filter((g) => (JSON.parse(ids) as string[]).includes(g.id));
      for (const i of indexes(q, "Tag")) {
        const key = q.get(`Tag.${i}.Key`), value = q.get(`Tag.${i}.Value`);
        list = list.filter((g) =>
          g.tags.some((t) => t.Key === key && (value === null || t.Value === value))
        );
      }
      const limit = Number(q.get("Limit") ?? 20);
      const start = Number(q.get("NextToken") || 0);
      const page = list.slice(start, start + limit);
      const next = start + limit < list.length ? String(start + limit) : "";
      return answer({
        RequestId: `req-${++serial}`,
        TotalCount: list.length,
        NextToken: next,
        ContainerGroups: page.map(groupBody),
      });
    },
    DeleteContainerGroup(q) {
      const id = q.get("ContainerGroupId")!;
      if (!groups.delete(id)) {
        return fail(
          404,
          "InvalidContainerGroup.NotFound",
          `The container group ${id} does not exist.`,
        );
      }
      return answer({ RequestId: `req-${++serial}` });
    },
    DescribeContainerGroupEvents(q) {
      const ids = JSON.parse(q.get("ContainerGroupIds") ?? "[]") as string[];
      const data = ids.filter((id) => groups.has(id)).map((id) => {
        const g = groups.get(id)!;
        const at = new Date(g.createdMs).toISOString();
        return {
          ContainerGroupId: id,
          Name: g.name,
          Events: [{
            Count: 1,
            Type: "Normal",
            Reason: "Started",
            Message: "Started container group",
            FirstTimestamp: at,
            LastTimestamp: at,
          }],
        };
      });
      return answer({ RequestId: `req-${++serial}`, Data: data, TotalCount: data.length });
    },
    DescribeContainerLog(q) {
      const id = q.get("ContainerGroupId")!, name = q.get("ContainerName")!;
      const g = groups.get(id);
      if (!g) {
        return fail(
          404,
          "InvalidContainerGroup.NotFound",
          `The container group ${id} does not exist.`,
        );
      }
      let lines = logs.get(`${id}/${name}`) ?? [];
      const since = q.get("SinceSeconds"), start = q.get("StartTime"), tail = q.get("Tail");
      if (since) lines = lines.filter((l) => l.ms >= Date.now() - Number(since) * 1000);
      if (start) lines = lines.filter((l) => l.ms >= Date.parse(start));
      // Without Tail, ECI answers the newest 500 lines (its metadata: "Default value: 500").
      lines = lines.slice(-Number(tail ?? 500));
      const stamps = q.get("Timestamps") === "true";
      let content = lines.map((l) => `${stamps ? `${nanoTime(l.ms)} ` : ""}${l.line}\n`).join("");
      const limit = q.get("LimitBytes");
      if (limit) {
        content = new TextDecoder().decode(
          new TextEncoder().encode(content).subarray(0, Number(limit)),
        );
      }
      return answer({ RequestId: `req-${++serial}`, ContainerName: name, Content: content });
    },
    ExecContainerCommand(q, url) {
      const id = q.get("ContainerGroupId")!;
      if (!groups.has(id)) {
        return fail(
          404,
          "InvalidContainerGroup.NotFound",
          `The container group ${id} does not exist.`,
        );
      }
      const session = crypto.randomUUID();
      execs.set(session, { command: JSON.parse(q.get("Command")!) });
      return answer({
        RequestId: `req-${++serial}`,
        WebSocketUri: `ws://${url.host}/exec/${session}?token=x`,
      });
    },
    DescribeContainerGroupMetric(q) {
      const id = q.get("ContainerGroupId")!;
      const g = groups.get(id);
      if (!g) {
        return fail(
          404,
          "InvalidContainerGroup.NotFound",
          `The container group ${id} does not exist.`,
        );
      }
      const cpu = {
        UsageNanoCores: 1_000_000,
        UsageCoreNanoSeconds: 5_000_000_000,
        Load: 0,
        Limit: 1000,
      };
      const memory = {
        UsageBytes: 8 << 20,
        WorkingSet: 6 << 20,
        Rss: 4 << 20,
        AvailableBytes: 500 << 20,
        Cache: 0,
      };
      return answer({
        RequestId: `req-${++serial}`,
        ContainerGroupId: id,
        Records: [{
          Timestamp: new Date().toISOString(),
          CPU: cpu,
          Memory: memory,
          Containers: g.containers.map((c) => ({ Name: c.name, CPU: cpu, Memory: memory })),
        }],
      });
    },
  };

  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const url = new URL(req.url);
    if (url.pathname.startsWith("/exec/")) {
      const session = execs.get(url.pathname.slice(6));
      if (!session) return new Response("no such session", { status: 404 });
      execs.delete(url.pathname.slice(6));
      const { socket, response } = Deno.upgradeWebSocket(req, { protocol: "v4.channel.k8s.io" });
      runExecSocket(socket, session.command);
      return response;
    }
    const text = await req.text();
    const body = new URLSearchParams(req.headers.get("content-type")?.includes("form") ? text : "");
    const action = url.searchParams.get("Action") ?? req.headers.get("x-acs-action") ?? "";
    const version = url.searchParams.get("Version") ?? req.headers.get("x-acs-version") ?? "";
    const problems = validateRequest(ops, {
      method: req.method,
      action,
      version,
      query: url.searchParams,
      body,
    });
    emu.calls.push(action);
    if (problems.length) {
      emu.strays.push(`${action}: ${problems.join("; ")}`);
      return fail(
        400,
        "InvalidParameter",
        `The request does not match the API metadata: ${problems.join("; ")}`,
      );
    }
    if (throttled > 0) {
      throttled--;
      return fail(400, "Throttling.User", "Request was denied due to user flow control.");
    }
    const handler = actions[action];
    if (!handler) {
      return fail(400, "InvalidAction.NotFound", `The emulator does not implement ${action}.`);
    }
    return handler(url.searchParams, url);
  });
  emu.endpoint = `http://127.0.0.1:${server.addr.port}`;
  emu.stop = () => server.shutdown();
  return Promise.resolve(emu);
}
