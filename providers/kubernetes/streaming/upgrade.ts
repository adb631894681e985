/**
 * Opens a SPDY/3.1 connection to cluster B's apiserver for exec, attach and port-forward, as
 * kubectl does: an HTTPS request with `Upgrade: SPDY/3.1` and the sub-protocols offered in
 * `X-Stream-Protocol-Version`, then a client-role {@link SpdySession} on the upgraded socket.
 * `node:https` is used because its client hands over the raw socket after a 101 and presents
 * a client certificate; Deno's fetch does neither.
 * @module
 */
import { request } from "node:https";
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { KubeClient, Query } from "../../../k8s/mod.ts";
import { mergeCredentials } from "../../../k8s/transport.ts";
import { duplexFromNodeSocket } from "../../../spdy/node_socket_duplex.ts";
import { SpdySession } from "../../../spdy/session.ts";
import { NotFoundError, TransientError } from "../../../provider/mod.ts";

/** An upgraded connection and the sub-protocol the apiserver chose. */
export interface SpdyConnection {
  session: SpdySession;
  protocol: string;
}

/** Upgrades `POST path?query` on B's apiserver to SPDY/3.1, offering `protocols`. */
export async function openSpdy(
  kube: Pick<KubeClient, "config">,
  path: string,
  query: Query | URLSearchParams,
  protocols: string[],
  signal?: AbortSignal,
): Promise<SpdyConnection> {
  const config = kube.config;
  const credentials = mergeCredentials(
    config.credentials,
    await config.credentialSource?.get({ signal }),
  );
  const url = new URL(config.server + path);
  url.search = searchOf(query);
  const headers: Record<string, string | string[]> = {
    "Connection": "Upgrade",
    "Upgrade": "SPDY/3.1",
    "X-Stream-Protocol-Version": protocols,
  };
  if (credentials.token) headers["Authorization"] = `Bearer ${credentials.token}`;
  return await new Promise<SpdyConnection>((resolve, reject) => {
    const req = request({
      host: url.hostname,
      port: url.port || 443,
      path: url.pathname + url.search,
      method: "POST",
      headers,
      ca: config.caCerts,
      cert: credentials.clientCertificate?.cert,
      key: credentials.clientCertificate?.key,
      signal,
    });
    req.on("upgrade", (res: IncomingMessage, socket: Socket, head: Uint8Array) => {
      const protocol = String(res.headers["x-stream-protocol-version"] ?? "");
      const session = new SpdySession(duplexFromNodeSocket(socket, { head }), {
        role: "client",
        windowUpdates: false,
      });
      resolve({ session, protocol });
    });
    req.on("response", (res: IncomingMessage) => void refusal(res, path).then(reject));
    req.on("error", (err: Error) => {
      const message = `cannot reach the downstream apiserver: ${err.message}`;
      reject(new TransientError(message, { cause: err }));
    });
    req.end();
  });
}

function searchOf(query: Query | URLSearchParams): string {
  if (query instanceof URLSearchParams) return query.toString();
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
  return params.toString();
}

/** The apiserver answered without upgrading: its Status message, as the error to throw. */
function refusal(res: IncomingMessage, path: string): Promise<Error> {
  return new Promise((resolve) => {
    let body = "";
    res.setEncoding("utf8");
    res.on("data", (chunk: string) => body += chunk);
    res.on("end", () => {
      let message = body.trim();
      try {
        message = JSON.parse(body).message ?? message;
      } catch {
        // not a Status
      }
      const text =
        `the downstream apiserver refused the upgrade of ${path}: ${res.statusCode} ${message}`;
      resolve(res.statusCode === 404 ? new NotFoundError(text) : new TransientError(text));
    });
  });
}
