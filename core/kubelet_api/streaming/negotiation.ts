/**
 * The HTTP side of a SPDY/3.1 upgrade for exec, attach and port-forward: which sub-protocol to
 * speak, and the kubelet's exact answers when it cannot (k8s.io/streaming
 * `pkg/httpstream/httpstream.go : Handshake`, `pkg/httpstream/spdy/upgrade.go : UpgradeResponse`),
 * plus the exec/attach query options (cri-streaming `remotecommand/httpstream.go : NewOptions`).
 * @module
 */
import { StreamProtocol } from "../../../spdy/protocols.ts";

/** Every remote command protocol this package speaks, newest first. */
export const REMOTE_COMMAND_PROTOCOLS: readonly string[] = [
  StreamProtocol.v5,
  StreamProtocol.v4,
  StreamProtocol.v3,
  StreamProtocol.v2,
  StreamProtocol.v1,
];

/**
 * What a real kubelet offers for exec/attach (apimachinery `util/remotecommand/constants.go :
 * SupportedStreamingProtocols`); client-go then picks v4.
 */
export const KUBELET_REMOTE_COMMAND_PROTOCOLS: readonly string[] = REMOTE_COMMAND_PROTOCOLS.slice(
  1,
);

/** The protocol version number (1–5) of a remote command protocol name, or 0 if unknown. */
export function remoteCommandVersion(protocol: string): number {
  const at = REMOTE_COMMAND_PROTOCOLS.indexOf(protocol);
  return at < 0 ? 0 : REMOTE_COMMAND_PROTOCOLS.length - at;
}

/** The request headers that decide an upgrade; raw values as the HTTP server saw them. */
export interface SpdyUpgradeRequest {
  connection?: string | null;
  upgrade?: string | null;
  /** `X-Stream-Protocol-Version`: one value per header line, or lines joined with commas. */
  streamProtocolVersion?: string | readonly string[] | null;
}

/** Response headers as name/value pairs; a name may repeat. */
export type HeaderPairs = Array<[name: string, value: string]>;

/** How to answer an upgrade request. */
export type SpdyUpgradeAnswer =
  | { ok: true; status: 101; protocol: string; headers: HeaderPairs }
  | { ok: false; status: 400 | 403; headers: HeaderPairs; body: string };

function refuse(status: 400 | 403, message: string, extra: HeaderPairs = []): SpdyUpgradeAnswer {
  // Go's http.Error: plain text, nosniff, message plus newline.
  const headers: HeaderPairs = [
    ...extra,
    ["Content-Type", "text/plain; charset=utf-8"],
    ["X-Content-Type-Options", "nosniff"],
  ];
  return { ok: false, status, headers, body: `${message}\n` };
}

/** Splits header values on commas and drops blanks (`commaSeparatedHeaderValues`). */
export function splitProtocolHeader(values: string | readonly string[] | null | undefined) {
  const list = typeof values === "string" ? [values] : values ?? [];
  return list.flatMap((value) => value.split(",")).map((p) => p.trim()).filter((p) => p);
}

/**
 * Chooses the first protocol in the client's order that the server supports, and answers like
 * the kubelet: 400 without `X-Stream-Protocol-Version`, 403 listing
 * `X-Accepted-Stream-Protocol-Versions` when nothing matches, 400 without the upgrade headers,
 * else 101 with `Connection`, `Upgrade: SPDY/3.1` and the chosen protocol.
 */
export function negotiateSpdyUpgrade(
  request: SpdyUpgradeRequest,
  serverProtocols: readonly string[],
): SpdyUpgradeAnswer {
  if (serverProtocols.length === 0) throw new TypeError("serverProtocols must not be empty");
  const raw = request.streamProtocolVersion;
  if (raw === undefined || raw === null || (Array.isArray(raw) && raw.length === 0)) {
    return refuse(400, "unable to upgrade: header X-Stream-Protocol-Version is required");
  }
  const offered = splitProtocolHeader(raw);
  if (offered.length === 0) {
    return refuse(
      400,
      "unable to upgrade: header X-Stream-Protocol-Version has no valid protocols",
    );
  }
  const chosen = offered.find((p) => serverProtocols.includes(p));
  if (!chosen) {
    return refuse(
      403,
      `unable to upgrade: unable to negotiate protocol: client supports [${offered.join(" ")}], ` +
        `server accepts [${serverProtocols.join(" ")}]`,
      serverProtocols.map((p) => ["X-Accepted-Stream-Protocol-Versions", p]),
    );
  }
  const connection = (request.connection ?? "").toLowerCase();
  const upgrade = (request.upgrade ?? "").toLowerCase();
  if (!connection.includes("upgrade") || !upgrade.includes("spdy/3.1")) {
    return refuse(400, "unable to upgrade: missing upgrade headers in request");
  }
  return {
    ok: true,
    status: 101,
    protocol: chosen,
    headers: [
      ["Connection", "Upgrade"],
      ["Upgrade", "SPDY/3.1"],
      ["X-Stream-Protocol-Version", chosen],
    ],
  };
}

/** Exec/attach options from the query string. */
export interface RemoteCommandQuery {
  command: string[];
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/**
 * Reads `command`, `input`, `output`, `error` and `tty` (each flag is on only when "1", as the
 * apiserver sends it). A TTY merges stderr into stdout, so `tty` turns `stderr` off. Returns a
 * 400 message when no stream is asked for.
 */
export function parseRemoteCommandQuery(
  params: URLSearchParams,
): { ok: true; query: RemoteCommandQuery } | { ok: false; status: 400; message: string } {
  const flag = (name: string) => params.get(name) === "1";
  const tty = flag("tty");
  const query = {
    command: params.getAll("command"),
    stdin: flag("input"),
    stdout: flag("output"),
    stderr: flag("error") && !tty,
    tty,
  };
  if (!query.stdin && !query.stdout && !query.stderr) {
    return {
      ok: false,
      status: 400,
      message: "you must specify at least 1 of stdin, stdout, stderr",
    };
  }
  return { ok: true, query };
}
