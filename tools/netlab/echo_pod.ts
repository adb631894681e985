/**
 * A process pod for the lab's tests that answers every GET with "<name> <client address>" on
 * port 8080, and a way to call a URL from inside it: the apiserver cannot reach the lab's kubelet
 * APIs, so {@link getFromPod} enters the pod's network and mount namespaces and root with nsenter
 * (its resolv.conf, so names go to CoreDNS as the pod's would).
 * @module
 */
import { type RunResult, tryRun, waitUntil } from "./command.ts";

/** The echo server (python3 -c ECHO <name>): every GET answered "<name> <client address>". */
export const ECHO = `
import http.server, socketserver, sys
name = sys.argv[1]
class Echo(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = f"{name} {self.client_address[0]}\\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
socketserver.ThreadingTCPServer.allow_reuse_address = True
socketserver.ThreadingTCPServer(("0.0.0.0", 8080), Echo).serve_forever()
`;

/** Prints the body of GET argv[1], or fails (python3 -c GET <url>). */
export const GET = "import sys, urllib.request\n" +
  "print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode().strip())";

/** The echo pod `name` bound to `nodeName`, Ready once it listens. */
export function echoPod(
  name: string,
  nodeName: string,
  labels: Record<string, string> = {},
): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, labels },
    spec: {
      nodeName,
      terminationGracePeriodSeconds: 1,
      containers: [{
        name: "main",
        image: "python:3",
        command: ["/usr/bin/python3", "-c", ECHO, name],
        ports: [{ containerPort: 8080 }],
        readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
      }],
    },
  };
}

/** The pid of echo pod `name`'s process. */
export async function echoPid(name: string): Promise<number> {
  return await waitUntil(`the process of pod ${name}`, async () => {
    for await (const entry of Deno.readDir("/proc")) {
      if (!/^\d+$/.test(entry.name)) continue;
      const argv = (await Deno.readTextFile(`/proc/${entry.name}/cmdline`).catch(() => ""))
        .split("\0").filter(Boolean);
      if (argv[0] === "/usr/bin/python3" && argv.at(-1) === name && argv[2] === ECHO) {
        return Number(entry.name);
      }
    }
    return undefined;
  }, { timeoutMs: 10_000 });
}

/** GET `url` inside the namespaces of process `pid` (a pod's), as the pod would. */
export function getFromPod(pid: number, url: string): Promise<RunResult> {
  return tryRun([
    "nsenter",
    `--target=${pid}`,
    "--net",
    "--mount",
    "--root",
    "--wd=/",
    "/usr/bin/python3",
    "-c",
    GET,
    url,
  ]);
}
