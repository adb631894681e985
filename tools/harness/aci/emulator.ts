/**
 * An ACI emulator for the aci provider's tests: the ARM routes of Microsoft.ContainerInstance
 * 2023-05-01 that the provider calls, on a loopback port, over the model of `./model.ts`.
 * It is test code that models what Azure's specification and documentation describe
 * (provisioning states, instance views, long-running PUT, paging, 404s, 429 with Retry-After);
 * it is not Azure. The tests put Prism in front of it, which checks every request and reply
 * against Azure's published specification; only the exec WebSocket (not in the specification)
 * is reached directly.
 * @module
 */
import {
  advance,
  instanceView,
  logOf,
  type ModelContainer,
  type ModelGroup,
  scriptOf,
  TIMING,
} from "./model.ts";
import { ArmLimits } from "./arm_limits.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/** A group as stored: the PUT body, the model, and where it came from. */
interface Stored {
  name: string;
  body: Json;
  model: ModelGroup;
  ip: string;
}

/** A running emulator. */
export interface AciEmulator {
  /** The emulator's own base URL (Prism forwards to it). */
  url: string;
  /** Groups by name (one subscription and resource group, as the tests use). */
  groups: Map<string, Stored>;
  /** Every request as `METHOD path`, for assertions. */
  requests: string[];
  /** When each of `requests` arrived (`Date.now()`), for profiles. */
  requestTimes: number[];
  /** The base URL clients reach (Prism's); nextLink points there. */
  publicUrl: string;
  /** Answers the next `n` requests 429 with `Retry-After: 1`. */
  throttle(n: number): void;
  /** Answers the next `n` requests 503. */
  fail(n: number): void;
  /** Deletes a group behind the provider's back. */
  remove(name: string): void;
  /** Changes every group the emulator answers with (to send a reply that breaks the spec). */
  mangle?: (group: Json) => Json;
  /**
   * ARM's per-subscription limits (`./arm_limits.ts`), enforced on every ARM request: 429 with
   * Retry-After past them, the remaining-tokens headers on every answer. `undefined`: none.
   */
  armLimits?: ArmLimits;
  /**
   * Each running container's use, as Azure Monitor's `CpuUsage` (millicores) and `MemoryUsage`
   * (bytes) report it; tests replace it to put load on a pod.
   */
  usage: (group: string, container: string) => { cpuMillicores: number; memoryBytes: number };
  /** Quota the usages route reports. */
  quota: { groups: number; cores: number };
  close(): Promise<void>;
}

const PAGE = 20;

function cloudError(status: number, code: string, message: string, headers: HeadersInit = {}) {
  return Response.json({ error: { code, message } }, { status, headers });
}

function modelOf(body: Json, nowMs: number): ModelGroup {
  const container = (c: Json): ModelContainer => ({
    name: c.name,
    script: scriptOf(c.properties?.command),
    runs: [],
  });
  return {
    createdMs: nowMs,
    restartPolicy: body.properties?.restartPolicy ?? "Always",
    init: (body.properties?.initContainers ?? []).map(container),
    containers: (body.properties?.containers ?? []).map(container),
  };
}

/** The group as ACI answers GET: the body without secrets, with states and instance views. */
function view(stored: Stored, base: string, nowMs: number): Json {
  advance(stored.model, nowMs);
  const p = stored.body.properties;
  const provisioned = nowMs >= stored.model.createdMs + TIMING.provisionMs;
  const strip = (c: Json, m: ModelContainer) => ({
    name: c.name,
    properties: {
      ...c.properties,
      environmentVariables: c.properties.environmentVariables?.map((e: Json) => ({
        name: e.name,
        ...(e.value !== undefined ? { value: e.value } : {}),
      })),
      ...(provisioned ? { instanceView: instanceView(m, nowMs) } : {}),
    },
  });
  const containers = p.containers.map((c: Json, i: number) => strip(c, stored.model.containers[i]));
  const states = containers.map((c: Json) => c.properties.instanceView?.currentState?.state);
  const done = states.every((s: string) => s === "Terminated");
  const failed = stored.model.init.some((c) => c.runs.at(-1)?.exitCode) &&
    stored.model.restartPolicy === "Never";
  return {
    id: `${base}/containerGroups/${stored.name}`,
    name: stored.name,
    type: "Microsoft.ContainerInstance/containerGroups",
    location: stored.body.location,
    ...(stored.body.tags ? { tags: stored.body.tags } : {}),
    ...(stored.body.identity ? { identity: identityView(stored.body.identity) } : {}),
    properties: {
      ...p,
      provisioningState: provisioned ? (failed ? "Failed" : "Succeeded") : "Creating",
      containers,
      ...(p.initContainers
        ? {
          initContainers: p.initContainers.map((c: Json, i: number) =>
            strip(c, stored.model.init[i])
          ),
        }
        : {}),
      ...(p.ipAddress ? { ipAddress: { ...p.ipAddress, ip: stored.ip } } : {}),
      // ACI never returns secret files, storage keys or protected settings. The workspace key is
      // marked x-ms-secret but also required in replies by the 2023-05-01 description, so it stays.
      volumes: p.volumes?.map((v: Json) =>
        v.secret
          ? { name: v.name, secret: {} }
          : v.azureFile
          ? { name: v.name, azureFile: { ...v.azureFile, storageAccountKey: undefined } }
          : v
      ),
      ...(p.extensions
        ? {
          extensions: p.extensions.map((e: Json) => ({
            ...e,
            properties: { ...e.properties, protectedSettings: undefined },
          })),
        }
        : {}),

      imageRegistryCredentials: p.imageRegistryCredentials?.map((c: Json) => ({
        server: c.server,
        username: c.username,
      })),
      instanceView: {
        state: !provisioned ? "Pending" : failed ? "Failed" : done ? "Succeeded" : "Running",
        events: [],
      },
    },
  };
}

/**
 * Azure Monitor's Metrics - List answer for a group, in its documented shape: one metric per name
 * asked, one time series per running container (dimension containerName), a value a minute for
 * the minutes the container has run, `average` only (as asked).
 */
function metricsOf(
  id: string,
  stored: Stored,
  query: URLSearchParams,
  nowMs: number,
  usage: AciEmulator["usage"],
): Json {
  const names = (query.get("metricnames") ?? "").split(",").filter(Boolean);
  const [from, to] = (query.get("timespan") ?? "").split("/").map((t) => Date.parse(t));
  const minute = 60_000;
  const running = stored.model.containers.filter((c) => {
    const run = c.runs.at(-1);
    return run && run.startMs <= nowMs && (run.endMs === undefined || run.endMs > nowMs);
  });
  const metric = (name: string) => ({
    id: `${id}/providers/Microsoft.Insights/metrics/${name}`,
    type: "Microsoft.Insights/metrics",
    name: { value: name, localizedValue: name === "CpuUsage" ? "CPU Usage" : "Memory Usage" },
    displayDescription: name === "CpuUsage"
      ? "CPU usage on all cores in millicores."
      : "Total memory usage in byte.",
    unit: name === "CpuUsage" ? "Count" : "Bytes",
    timeseries: running.map((c) => {
      const startMs = c.runs.at(-1)!.startMs;
      const data = [];
      for (let t = Math.floor(from / minute) * minute; t < to; t += minute) {
        const u = usage(stored.name, c.name);
        const value = name === "CpuUsage" ? u.cpuMillicores : u.memoryBytes;
        // A minute the container had not started yet has a timestamp and no value.
        data.push({
          timeStamp: new Date(t).toISOString(),
          ...(t + minute > startMs ? { average: value } : {}),
        });
      }
      return {
        metadatavalues: [{
          name: { value: "containername", localizedValue: "containerName" },
          value: c.name,
        }],
        data,
      };
    }),
    errorCode: "Success",
  });
  return {
    cost: 0,
    timespan: query.get("timespan"),
    interval: query.get("interval") ?? "PT1M",
    value: names.map(metric),
    namespace: "Microsoft.ContainerInstance/containerGroups",
    resourceregion: stored.body.location,
  };
}

/** A group as a list item: the GET's answer without its or its containers' instance views. */
function withoutInstanceViews(group: Json): Json {
  const strip = (c: Json) => ({ ...c, properties: { ...c.properties, instanceView: undefined } });
  const p = group.properties;
  return {
    ...group,
    properties: {
      ...p,
      instanceView: undefined,
      containers: p.containers.map(strip),
      ...(p.initContainers ? { initContainers: p.initContainers.map(strip) } : {}),
    },
  };
}

/** The group's identity as ACI answers: each user-assigned one with its principal and client IDs. */
function identityView(identity: Json): Json {
  const ids = Object.keys(identity.userAssignedIdentities ?? {});
  const uuidOf = (seed: string) => {
    const hex = [...seed].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7).toString(16);
    return `${hex.padStart(8, "0")}-0000-4000-8000-000000000000`;
  };
  return {
    type: identity.type,
    userAssignedIdentities: Object.fromEntries(
      ids.map((id) => [id, { principalId: uuidOf(`p${id}`), clientId: uuidOf(`c${id}`) }]),
    ),
  };
}

/** Starts the emulator on a free loopback port. */
export function startAciEmulator(): AciEmulator {
  const groups = new Map<string, Stored>();
  const execs = new Map<string, { password: string; command: string }>();
  let throttled = 0;
  let failing = 0;
  let ipSerial = 0;
  const emu: AciEmulator = {
    url: "",
    groups,
    requests: [],
    requestTimes: [],
    publicUrl: "",
    throttle: (n) => void (throttled = n),
    fail: (n) => void (failing = n),
    remove: (name) => void groups.delete(name),
    quota: { groups: 1000, cores: 1000 },
    armLimits: new ArmLimits(),
    usage: () => ({ cpuMillicores: 10, memoryBytes: 32 * 2 ** 20 }),
    close: () => server.shutdown(),
  };
  const handle = async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    const path = url.pathname;
    const exec = path.match(/^\/exec\/([\w-]+)$/);
    if (exec) return execSocket(req, execs.get(exec[1]));
    emu.requests.push(`${req.method} ${path}`);
    emu.requestTimes.push(Date.now());
    if (throttled > 0) {
      throttled--;
      return cloudError(429, "TooManyRequests", "Too many requests; retry later", {
        "Retry-After": "1",
      });
    }
    if (failing > 0) {
      failing--;
      return cloudError(503, "ServiceUnavailable", "The service is unavailable; retry later");
    }
    const now = Date.now();
    const metrics = path.match(
      /^(\/subscriptions\/[^/]+\/resourceGroups\/[^/]+\/providers\/Microsoft\.ContainerInstance\/containerGroups\/([^/]+))\/providers\/Microsoft\.Insights\/metrics$/,
    );
    if (metrics && req.method === "GET") {
      const stored = groups.get(metrics[2]);
      if (!stored) return cloudError(404, "ResourceNotFound", `${metrics[1]} not found`);
      advance(stored.model, now);
      return Response.json(metricsOf(metrics[1], stored, url.searchParams, now, emu.usage));
    }
    const loc = path.match(/\/locations\/([^/]+)\/(usages|capabilities)$/);
    if (loc && req.method === "GET") return locationRoute(loc[1], loc[2], emu.quota);
    const m = path.match(
      /^(\/subscriptions\/[^/]+\/resourceGroups\/[^/]+\/providers\/Microsoft\.ContainerInstance)\/containerGroups(?:\/([^/]+))?(?:\/containers\/([^/]+)\/(logs|exec))?$/,
    );
    if (!m) return cloudError(404, "NotFound", `no route ${req.method} ${path}`);
    const [, base, name, container, action] = m;
    if (!name) {
      const all = [...groups.values()];
      const skip = Number(url.searchParams.get("$skipToken") ?? 0);
      // As the published ListByResourceGroup example: no instance views in list items.
      const page = all.slice(skip, skip + PAGE).map((g) =>
        withoutInstanceViews(view(g, base, now))
      );
      const next = skip + PAGE < all.length
        ? `${emu.publicUrl}${path}?api-version=2023-05-01&$skipToken=${skip + PAGE}`
        : undefined;
      return Response.json({ value: page, ...(next ? { nextLink: next } : {}) });
    }
    const stored = groups.get(name);
    if (action) {
      if (!stored) return cloudError(404, "ResourceNotFound", `container group ${name} not found`);
      advance(stored.model, now);
      const c = [...stored.model.containers, ...stored.model.init].find((x) =>
        x.name === container
      );
      if (!c) return cloudError(404, "ContainerNotFound", `container ${container} not found`);
      if (action === "logs") {
        const tail = url.searchParams.get("tail");
        return Response.json({
          content: logOf(
            c,
            now,
            tail === null ? undefined : Number(tail),
            url.searchParams.get("timestamps") === "true",
          ),
        });
      }
      const body = await req.json();
      const id = crypto.randomUUID();
      execs.set(id, { password: crypto.randomUUID(), command: body.command ?? "" });
      return Response.json({
        webSocketUri: `${emu.url.replace(/^http/, "ws")}/exec/${id}`,
        password: execs.get(id)!.password,
      });
    }
    if (req.method === "GET") {
      if (!stored) return cloudError(404, "ResourceNotFound", `container group ${name} not found`);
      const group = view(stored, base, now);
      return Response.json(emu.mangle ? emu.mangle(group) : group);
    }
    if (req.method === "DELETE") {
      if (!stored) return new Response(null, { status: 204 });
      groups.delete(name);
      return Response.json(view(stored, base, now));
    }
    if (req.method === "PUT") {
      const body = await req.json();
      if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(name)) {
        return cloudError(
          400,
          "InvalidContainerGroupName",
          `container group name ${name} is invalid`,
        );
      }
      if (stored) {
        stored.body = body;
        return Response.json(view(stored, base, now), { status: 200 });
      }
      const created: Stored = {
        name,
        body,
        model: modelOf(body, now),
        ip: `10.240.${(ipSerial >> 8) & 255}.${(ipSerial++ & 255) + 1}`,
      };
      groups.set(name, created);
      return Response.json(view(created, base, now), { status: 201 });
    }
    return cloudError(405, "MethodNotAllowed", `${req.method} is not modelled`);
  };
  const limited = async (req: Request): Promise<Response> => {
    const path = new URL(req.url).pathname;
    const subscription = path.match(/^\/subscriptions\/([^/]+)/)?.[1];
    if (!subscription || !emu.armLimits) return await handle(req);
    const verdict = emu.armLimits.take(subscription, req.method, Date.now());
    const header = `x-ms-ratelimit-remaining-subscription-${verdict.operation}`;
    if (!verdict.ok) {
      emu.requests.push(`${req.method} ${path}`);
      emu.requestTimes.push(Date.now());
      return cloudError(
        429,
        "SubscriptionRequestsThrottled",
        `Number of '${verdict.operation}' requests for subscription '${subscription}' exceeded; retry after ${verdict.retryAfterS} seconds`,
        { "Retry-After": String(verdict.retryAfterS), [header]: "0" },
      );
    }
    const response = await handle(req);
    if (response.status !== 101) response.headers.set(header, String(verdict.remaining));
    return response;
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, limited);
  emu.url = `http://127.0.0.1:${server.addr.port}`;
  emu.publicUrl = emu.url;
  return emu;
}

function locationRoute(location: string, what: string, quota: AciEmulator["quota"]) {
  if (what === "usages") {
    return Response.json({
      value: [
        usage("ContainerGroups", "Container Groups", quota.groups),
        usage("StandardCores", "Standard Cores", quota.cores),
      ],
    });
  }
  return Response.json({
    value: [{
      resourceType: "containerGroups",
      osType: "Linux",
      location,
      ipAddressType: "Public",
      gpu: "None",
      capabilities: { maxMemoryInGB: 16, maxCpu: 4, maxGpuCount: 0 },
    }],
  });
}

function usage(value: string, localized: string, limit: number) {
  return {
    id: `usages/${value}`,
    unit: "Count",
    currentValue: 0,
    limit,
    name: { value, localizedValue: localized },
  };
}

/**
 * The exec terminal: the first message must be the password; then `echo TEXT` answers TEXT and
 * closes, and anything else echoes the client's input back until it sends `exit`.
 */
function execSocket(req: Request, session?: { password: string; command: string }): Response {
  if (!session || req.headers.get("upgrade") !== "websocket") {
    return new Response("no such exec session", { status: 404 });
  }
  const { socket, response } = Deno.upgradeWebSocket(req);
  let authed = false;
  socket.onmessage = (e) => {
    const text = typeof e.data === "string" ? e.data : new TextDecoder().decode(e.data);
    if (!authed) {
      if (text !== session.password) return socket.close(4001, "wrong password");
      authed = true;
      const script = scriptOf(session.command.split(" "));
      if (script.lines.length) {
        for (const line of script.lines) socket.send(`${line}\r\n`);
        socket.close(1000);
      }
      return;
    }
    if (text.trim() === "exit") return socket.close(1000);
    socket.send(text);
  };
  return response;
}
