/**
 * Streaming protocols of the kubelet API, as pure, socket-agnostic building blocks:
 *
 * - `spdy_frames.ts`, `spdy_frame_parser.ts`: SPDY/3 frame codec and incremental parser;
 * - `spdy_headers.ts`: header blocks, zlib with the SPDY/3 dictionary;
 * - `spdy_session.ts`, `spdy_stream.ts`: a SPDY/3.1 connection over any {@link ByteDuplex},
 *   with no flow-control stalls against Go's moby/spdystream;
 * - `node_socket_duplex.ts`: a node:net/tls socket as a {@link ByteDuplex};
 * - `negotiation.ts`: `X-Stream-Protocol-Version` negotiation and exec/attach query options;
 * - `remote_command.ts`, `resize.ts`: exec/attach streams, exit status, terminal resizes;
 * - `port_forward.ts`: port-forward stream pairing;
 * - `ws_channels.ts`: the WebSocket channel protocols (channel.k8s.io … v5.channel.k8s.io).
 *
 * And the piece that uses them: `handler.ts`, {@link createStreamingHandler}, the kubelet API's
 * `StreamingHandler` (SPDY and WebSocket exec, attach and port-forward through the provider,
 * with idle and stream-creation timeouts), and `declared_features.ts`, {@link declaredFeatures}
 * for `node.status.declaredFeatures`.
 *
 * ```ts
 * const session = new SpdySession(duplexFromNodeSocket(socket, { head }), { role: "server" });
 * const command = await acceptRemoteCommand(session, {
 *   protocol, expectStdin: true, expectStdout: true, expectStderr: true, tty: false,
 * });
 * await command.stdin!.pipeTo(command.stdout!);
 * await command.finish({ exitCode: 0 });
 * ```
 * @module
 */
export * from "./errors.ts";
export * from "./spdy_frames.ts";
export * from "./spdy_frame_parser.ts";
export * from "./spdy_headers.ts";
export * from "./byte_duplex.ts";
export * from "./spdy_session.ts";
export * from "./spdy_stream.ts";
export * from "./node_socket_duplex.ts";
export * from "./negotiation.ts";
export * from "./remote_command.ts";
export * from "./resize.ts";
export * from "./port_forward.ts";
export * from "./ws_channels.ts";
export * from "./handler.ts";
export * from "./declared_features.ts";
