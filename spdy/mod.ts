/**
 * SPDY/3.1 as Kubernetes uses it, as a library with no kubelet in it: the kubelet API's exec,
 * attach and port-forward serve on it, and the kubernetes provider dials a downstream kubelet
 * with it.
 *
 * - `frames.ts`, `frame_parser.ts`: the frame codec and an incremental parser;
 * - `headers.ts`: header blocks, zlib with the SPDY/3 dictionary;
 * - `session.ts`, `stream.ts`: a SPDY/3.1 connection over any {@link ByteDuplex}, with no
 *   flow-control stalls against Go's moby/spdystream;
 * - `node_socket_duplex.ts`: a node:net/tls socket as a {@link ByteDuplex};
 * - `errors.ts`: protocol, stream and remote-command errors with their predicates;
 * - `protocols.ts`: the exec/attach/port-forward sub-protocol names, SPDY and WebSocket alike.
 *
 * ```ts
 * const session = new SpdySession(duplexFromNodeSocket(socket, { head }), { role: "server" });
 * const stream = await session.accept(); // null once the connection is gone
 * ```
 * @module
 */
export * from "./errors.ts";
export * from "./frames.ts";
export * from "./frame_parser.ts";
export * from "./headers.ts";
export * from "./byte_duplex.ts";
export * from "./session.ts";
export * from "./stream.ts";
export * from "./node_socket_duplex.ts";
export * from "./protocols.ts";
