/**
 * What this node may put into `node.status.declaredFeatures` (KEP-5328 node declared features;
 * the field exists from Kubernetes 1.35). Declaring `ExtendWebSocketsToKubelet` makes 1.36+
 * apiservers pass kubectl's WebSocket exec/attach (v5.channel.k8s.io) and port-forward tunnel
 * (`SPDY/3.1+portforward.k8s.io`) through to this kubelet instead of translating them to SPDY
 * (kubernetes/kubernetes `pkg/registry/core/pod/rest/subresources.go :
 * checkNodeSupportsWebsockets`; component-helpers `nodedeclaredfeatures/features/
 * extendwebsocketstokubelet/feature.go`).
 * @module
 */

/** The feature that lets the apiserver proxy WebSocket streaming to this node untranslated. */
export const EXTEND_WEBSOCKETS_TO_KUBELET = "ExtendWebSocketsToKubelet";

/** The features the streaming handler supports, for `node.status.declaredFeatures`. */
export function declaredFeatures(): string[] {
  return [EXTEND_WEBSOCKETS_TO_KUBELET];
}
