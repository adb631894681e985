/**
 * Streaming protocols of the kubelet API on top of the SPDY library (`spdy/`) and `ws`:
 *
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
export * from "./negotiation.ts";
export * from "./remote_command.ts";
export * from "./resize.ts";
export * from "./port_forward.ts";
export * from "./ws_channels.ts";
export * from "./handler.ts";
export * from "./declared_features.ts";
