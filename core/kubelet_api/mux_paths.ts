/**
 * Paths answered as the kubelet's Go mux answers them (kubernetes/kubernetes
 * pkg/kubelet/server/server.go on a go-restful container over `net/http.ServeMux`):
 *
 * - a path that is not clean (`//`, `/./`, `/../`) is redirected (301) to its clean form;
 * - a subtree pattern's path without its slash (`/runningpods`, `/stats`, `/logs`,
 *   `/checkpoint`, `/debug/pprof`) is redirected (301) to the slash form, which is how client-go's
 *   `nodes/NODE/proxy/runningpods/` (joined to `.../runningpods`) reaches the handler;
 * - under a go-restful web service's root (`/pods`, `/exec`, `/containerLogs`, ...) a trailing
 *   slash is ignored (go-restful `TrimRightSlashEnabled`): `/pods/` is `/pods`.
 *
 * These redirects happen in the mux, before the kubelet's authentication filter, so they answer
 * without credentials, as the kubelet does.
 * @module
 */

/** ServeMux subtree patterns the kubelet registers (they end in `/`). */
const SUBTREES = ["/runningpods/", "/stats/", "/logs/", "/checkpoint/", "/debug/pprof/"];

/** Roots of the kubelet's go-restful web services, under which a trailing slash is trimmed. */
const SERVICE_ROOTS = new Set([
  "pods",
  "run",
  "exec",
  "attach",
  "portForward",
  "containerLogs",
  "runningpods",
  "stats",
  "logs",
  "checkpoint",
  "allocatedPods",
]);

/** Go's `cleanPath` (net/http): `path.Clean`, keeping a trailing slash, rooted. */
export function cleanPath(path: string): string {
  if (path === "") return "/";
  const rooted = path.startsWith("/") ? path : `/${path}`;
  const out: string[] = [];
  for (const segment of rooted.split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") out.pop();
    else out.push(segment);
  }
  const cleaned = `/${out.join("/")}`;
  return rooted.endsWith("/") && cleaned !== "/" ? `${cleaned}/` : cleaned;
}

/** Where the mux redirects `path`, or undefined when it routes it as it is. */
export function muxRedirect(path: string): string | undefined {
  const cleaned = cleanPath(path);
  if (cleaned !== path) return cleaned;
  if (SUBTREES.includes(`${path}/`)) return `${path}/`;
  return undefined;
}

/** The path routes are matched against: the trailing slash trimmed under a web service root. */
export function routePath(path: string): string {
  if (path.length <= 1 || !path.endsWith("/")) return path;
  const root = path.slice(1, path.indexOf("/", 1) === -1 ? undefined : path.indexOf("/", 1));
  if (!SERVICE_ROOTS.has(root) || SUBTREES.includes(path)) return path;
  return path.replace(/\/+$/, "");
}

/** The 301 the Go mux writes (`http.Redirect`): Location with the query, a short HTML body. */
export function redirectResponse(request: Request, target: string): Response {
  const query = new URL(request.url).search;
  const location = `${target}${query}`;
  const body = request.method === "GET" || request.method === "HEAD"
    ? `<a href="${
      location.replaceAll("&", "&amp;").replaceAll('"', "&#34;")
    }">Moved Permanently</a>.\n\n`
    : null;
  return new Response(request.method === "HEAD" ? null : body, {
    status: 301,
    headers: {
      location,
      ...(body !== null ? { "content-type": "text/html; charset=utf-8" } : {}),
    },
  });
}
