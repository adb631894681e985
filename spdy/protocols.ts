/**
 * The sub-protocol names Kubernetes negotiates for exec, attach and port-forward, over SPDY
 * (`X-Stream-Protocol-Version`) and WebSocket (`Sec-WebSocket-Protocol`) alike, defined once:
 * k8s.io/apimachinery `pkg/util/remotecommand/constants.go`, k8s.io/streaming
 * `pkg/httpstream/wsstream/conn.go` and cri-streaming `portforward/constants.go`.
 * @module
 */

/** Every stream sub-protocol name vkubelet speaks or dials. */
export const StreamProtocol = {
  /** Remote command v1 (SPDY), and WebSocket channels with binary frames. */
  v1: "channel.k8s.io",
  /** Remote command v2: fixes v1's stdin and error stream bugs (SPDY only). */
  v2: "v2.channel.k8s.io",
  /** Remote command v3: adds terminal resize (SPDY only). */
  v3: "v3.channel.k8s.io",
  /** Remote command v4: exit codes as metav1.Status JSON on the error stream. */
  v4: "v4.channel.k8s.io",
  /** Remote command v5: v4 plus the WebSocket CLOSE signal (the same as v4 over SPDY). */
  v5: "v5.channel.k8s.io",
  /** WebSocket channels with base64 text frames. */
  v1Base64: "base64.channel.k8s.io",
  /** WebSocket v4 channels with base64 text frames. */
  v4Base64: "v4.base64.channel.k8s.io",
  /** Port-forward over SPDY. */
  portForward: "portforward.k8s.io",
  /** Port-forward tunnelled as raw SPDY bytes in WebSocket binary messages (kubectl ≥ 1.31). */
  spdyPortForwardTunnel: "SPDY/3.1+portforward.k8s.io",
} as const;
