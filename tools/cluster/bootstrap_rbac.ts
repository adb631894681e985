/**
 * What a kubelet needs to join the local control plane with nothing but a bootstrap token, as
 * kubeadm sets it up (kubernetes/kubernetes cmd/kubeadm/app/phases/bootstraptoken/node/
 * tlsbootstrap.go): the group `system:bootstrappers` may create CertificateSigningRequests
 * (ClusterRole `system:node-bootstrapper`), and the controller manager's `csrapproving`
 * controller approves node client certificates requested by a bootstrapper (`nodeclient`) and
 * the renewals a node requests for itself (`selfnodeclient`). The ClusterRoles are the
 * apiserver's own (plugin/pkg/auth/authorizer/rbac/bootstrappolicy); only the bindings are ours.
 * @module
 */

/** The bindings, one apply-able `List` in JSON. */
export function bootstrapBindings(): string {
  const binding = (name: string, role: string, group: string) => ({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: group }],
  });
  const csr = "system:certificates.k8s.io:certificatesigningrequests";
  return JSON.stringify({
    apiVersion: "v1",
    kind: "List",
    items: [
      binding("cluster:kubelet-bootstrap", "system:node-bootstrapper", "system:bootstrappers"),
      binding("cluster:node-autoapprove-bootstrap", `${csr}:nodeclient`, "system:bootstrappers"),
      binding(
        "cluster:node-autoapprove-certificate-rotation",
        `${csr}:selfnodeclient`,
        "system:nodes",
      ),
    ],
  });
}
