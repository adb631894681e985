/**
 * The backend of the tunnel tests' ClusterIP Services: an HTTP server in the test host's network
 * namespace that answers with the address it saw the call come from (so a test can tell the pod
 * IP was the source), reached through nft DNAT rules standing in for kube-proxy's.
 * @module
 */
import { join } from "node:path";
import { eventually } from "../../tools/harness/wait.ts";
import { type networkLab, tryRun } from "../providers/process/_network_lab.ts";

type NetworkLab = Awaited<ReturnType<typeof networkLab>>;

const ECHO = `
import http.server, socketserver, sys
class Echo(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = f"backend saw {self.client_address[0]}\\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
socketserver.ThreadingTCPServer.allow_reuse_address = True
socketserver.ThreadingTCPServer((sys.argv[1], 8080), Echo).serve_forever()
`;

/** A Service address kube-proxy would translate: `ip:port` to the backend's port 8080. */
export interface ServiceAddress {
  ip: string;
  port: number;
}

/** The running backend; {@link ServiceBackend.route} makes it a Service's. */
export interface ServiceBackend {
  /** Writes the DNAT rules (a file in `dir`) and waits until the backend answers. */
  route(addresses: ServiceAddress[], dir: string): Promise<void>;
  /** Stops the backend (it may have ended already). */
  stop(): Promise<void>;
}

/** Starts the backend in `lab`'s test host, listening on `bind`:8080. */
export function serviceBackend(lab: NetworkLab, bind: string): ServiceBackend {
  const child = new Deno.Command("ip", {
    args: ["netns", "exec", lab.name, "python3", "-c", ECHO, bind],
    stdout: "null",
    stderr: "null",
  }).spawn();
  return {
    async route(addresses, dir) {
      const rules = addresses.map(({ ip, port }) =>
        `    ip daddr ${ip} tcp dport ${port} dnat to ${lab.gateway}:8080;`
      );
      const file = join(dir, "svc.nft");
      await Deno.writeTextFile(
        file,
        `table ip vkt_svc {\n  chain pre {\n    type nat hook prerouting priority -100;\n${
          rules.join("\n")
        }\n  }\n}\n`,
      );
      await lab.inHost("nft", "-f", file);
      // Python may still be starting on a loaded machine.
      const self = bind === "0.0.0.0" ? "127.0.0.1" : bind;
      const curl = ["netns", "exec", lab.name, "curl", "-sS", "-m", "1"];
      await eventually(
        "the Service's backend",
        async () => (await tryRun("ip", ...curl, `http://${self}:8080/`)).code === 0,
      );
    },
    async stop() {
      try {
        child.kill("SIGKILL");
      } catch {
        // it ended already
      }
      await child.status;
    },
  };
}
