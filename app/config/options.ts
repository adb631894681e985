/**
 * Every vkubelet option once: its flag, environment variables, config-file key, default and
 * help. `app/config/config.ts` builds the flag parser, the environment reader and the help text from
 * this table and validates the values with its zod schema. Names follow virtual-kubelet where it
 * has one (virtual-kubelet/virtual-kubelet cmd/virtual-kubelet/internal/commands/root/flag.go,
 * opts.go) and the kubelet's otherwise.
 * @module
 */

/** How a flag takes its value. */
export type OptionKind = "string" | "boolean" | "list";

/** One option. `key` is also the config-file key and the field of `Config`. */
export interface OptionSpec {
  key: string;
  /** Long flag name, without `--`. */
  flag: string;
  /** Other accepted flag names. */
  aliases?: string[];
  /**
   * Environment variables, strongest first: vkubelet's own, more specific name before the
   * virtual-kubelet one it also reads (`VKUBELET_NODE_IP` before `VKUBELET_POD_IP`).
   */
  env: string[];
  kind: OptionKind;
  /** Placeholder for the value in the help text. */
  value?: string;
  /**
   * The default as the help text shows it. A stated value (`10s`, `50`, `false`) must be the
   * schema's default in `schema.ts`: tests/app/config/defaults_test.ts holds the two
   * together; a described one (`the provider's name`) is listed there as described.
   */
  shownDefault?: string;
  help: string;
  group: "Node" | "Pods" | "Kubelet API" | "Logging" | "General";
}

const o = (spec: OptionSpec) => spec;

/** The option table, in help-text order. */
export const OPTIONS = [
  o({
    key: "config",
    flag: "config",
    env: ["VKUBELET_CONFIG"],
    kind: "string",
    value: "PATH",
    group: "General",
    help: "YAML or JSON file with any option below, by its file key.",
  }),
  o({
    key: "provider",
    flag: "provider",
    env: ["VKUBELET_PROVIDER"],
    kind: "string",
    value: "NAME|PATH",
    group: "General",
    help:
      "Required. A built-in provider (mock, process, kubernetes, fargate, interlink, aci, eci, slurm, zun), or the path of a module exporting createProvider.",
  }),
  o({
    key: "providerConfig",
    flag: "provider-config",
    env: ["VKUBELET_PROVIDER_CONFIG"],
    kind: "string",
    value: "PATH",
    group: "General",
    help: "The provider's own YAML or JSON config file.",
  }),
  o({
    key: "kubeconfig",
    flag: "kubeconfig",
    env: ["KUBECONFIG"],
    kind: "string",
    value: "PATH",
    shownDefault: "$KUBECONFIG, ~/.kube/config, then in-cluster",
    group: "General",
    help:
      "kubeconfig to reach the API server with. With --bootstrap-kubeconfig it need not exist: it is used while its client certificate is valid, and otherwise written (0600) after TLS bootstrap, naming the certificate in --cert-dir; $KUBECONFIG is not read then.",
  }),
  o({
    key: "bootstrapKubeconfig",
    flag: "bootstrap-kubeconfig",
    env: ["VKUBELET_BOOTSTRAP_KUBECONFIG"],
    kind: "string",
    value: "PATH",
    group: "General",
    help:
      "TLS bootstrap: unless --kubeconfig holds a valid client certificate, use a valid NODE-client-current.pem in --cert-dir or request one with this kubeconfig's (bootstrap token) credentials, and run as system:node:NAME; writes the kubeconfig to --kubeconfig (or NODE.kubeconfig in --cert-dir).",
  }),
  o({
    key: "rotateCertificates",
    flag: "rotate-certificates",
    env: ["VKUBELET_ROTATE_CERTIFICATES"],
    kind: "boolean",
    shownDefault: "false; true with --bootstrap-kubeconfig",
    group: "General",
    help:
      "Renew the node's client certificate through a CSR at 70-90 % of its lifetime, without a restart.",
  }),
  o({
    key: "kubeApiQps",
    flag: "kube-api-qps",
    env: ["VKUBELET_KUBE_API_QPS"],
    kind: "string",
    value: "N",
    shownDefault: "50",
    group: "General",
    help: "Sustained requests per second to the API server.",
  }),
  o({
    key: "kubeApiBurst",
    flag: "kube-api-burst",
    env: ["VKUBELET_KUBE_API_BURST"],
    kind: "string",
    value: "N",
    shownDefault: "100",
    group: "General",
    help: "Requests allowed in a burst above --kube-api-qps.",
  }),
  o({
    key: "eventQps",
    flag: "event-qps",
    env: ["VKUBELET_EVENT_QPS"],
    kind: "string",
    value: "N",
    shownDefault: "50",
    group: "General",
    help:
      "Pod event writes per second, limited apart from --kube-api-qps as the kubelet does; 0 = no limit.",
  }),
  o({
    key: "eventBurst",
    flag: "event-burst",
    env: ["VKUBELET_EVENT_BURST"],
    kind: "string",
    value: "N",
    shownDefault: "100",
    group: "General",
    help: "Event writes allowed in a burst above --event-qps.",
  }),
  o({
    key: "startupTimeout",
    flag: "startup-timeout",
    env: ["VKUBELET_STARTUP_TIMEOUT"],
    kind: "string",
    value: "DURATION",
    shownDefault: "0 (no limit)",
    group: "General",
    help: "Give up if the node and pod controllers are not ready within this time.",
  }),
  o({
    key: "nodeName",
    flag: "nodename",
    // The kubelet's name for it (kubernetes/kubernetes cmd/kubelet/app/options/options.go).
    aliases: ["hostname-override"],
    env: ["VKUBELET_NODE_NAME", "VKUBELET_HOSTNAME_OVERRIDE", "DEFAULT_NODE_NAME"],
    kind: "string",
    value: "NAME",
    shownDefault: "vkubelet",
    group: "Node",
    help: "Name of the Node to register (lowercase DNS name).",
  }),
  o({
    key: "nodes",
    flag: "nodes",
    env: ["VKUBELET_NODES"],
    kind: "list",
    value: "NAME,...",
    shownDefault: "one node, --nodename",
    group: "Node",
    help:
      "Serve several nodes from one process instead of --nodename, with every flag one node takes but --bootstrap-kubeconfig and --listen-address; per-node settings in the config file (docs/multinode.md).",
  }),
  o({
    key: "os",
    flag: "os",
    env: ["VKUBELET_OS"],
    kind: "string",
    value: "linux|windows",
    shownDefault: "linux",
    group: "Node",
    help: "Operating system the node reports (label kubernetes.io/os).",
  }),
  o({
    key: "nodeIp",
    flag: "node-ip",
    aliases: ["internal-ip"],
    env: ["VKUBELET_NODE_IP", "VKUBELET_POD_IP"],
    kind: "string",
    value: "IP",
    shownDefault: "this host's first non-internal address",
    group: "Node",
    help: "The node's InternalIP: where the API server reaches the kubelet API.",
  }),
  o({
    key: "nodeLabels",
    flag: "node-labels",
    env: ["VKUBELET_NODE_LABELS"],
    kind: "list",
    value: "K=V,...",
    group: "Node",
    help: "Extra labels for the Node; repeat the flag or separate with commas.",
  }),
  o({
    key: "disableTaint",
    flag: "disable-taint",
    env: ["VKUBELET_DISABLE_TAINT"],
    kind: "boolean",
    shownDefault: "false",
    group: "Node",
    help: "Do not taint the node (only pods tolerating the taint land on it otherwise).",
  }),
  o({
    key: "registerWithTaints",
    flag: "register-with-taints",
    env: ["VKUBELET_REGISTER_WITH_TAINTS"],
    kind: "list",
    value: "KEY[=VALUE]:EFFECT,...",
    group: "Node",
    help:
      "Taints the Node is registered with (the kubelet's flag), besides the provider taint unless --disable-taint.",
  }),
  o({
    key: "taintKey",
    flag: "taint-key",
    env: ["VKUBELET_TAINT_KEY"],
    kind: "string",
    value: "KEY",
    shownDefault: "virtual-kubelet.io/provider",
    group: "Node",
    help: "Key of the node's taint.",
  }),
  o({
    key: "taintValue",
    flag: "taint-value",
    env: ["VKUBELET_TAINT_VALUE"],
    kind: "string",
    value: "VALUE",
    shownDefault: "the provider's name",
    group: "Node",
    help: "Value of the node's taint.",
  }),
  o({
    key: "taintEffect",
    flag: "taint-effect",
    env: ["VKUBELET_TAINT_EFFECT"],
    kind: "string",
    value: "EFFECT",
    shownDefault: "NoSchedule",
    group: "Node",
    help: "Effect of the node's taint: NoSchedule, PreferNoSchedule or NoExecute.",
  }),
  o({
    key: "nodeLeaseDurationSeconds",
    flag: "node-lease-duration-seconds",
    env: ["VKUBELET_NODE_LEASE_DURATION_SECONDS"],
    kind: "string",
    value: "N",
    shownDefault: "40",
    group: "Node",
    help: "Duration of the node's Lease in kube-node-lease.",
  }),
  o({
    key: "nodeLeaseRenewInterval",
    flag: "node-lease-renew-interval",
    env: ["VKUBELET_NODE_LEASE_RENEW_INTERVAL"],
    kind: "string",
    value: "DURATION",
    shownDefault: "a quarter of the lease duration (10s)",
    group: "Node",
    help: "How often the Lease is renewed; must be shorter than its duration.",
  }),
  o({
    key: "nodeStatusUpdateFrequency",
    flag: "node-status-update-frequency",
    env: ["VKUBELET_NODE_STATUS_UPDATE_FREQUENCY"],
    kind: "string",
    value: "DURATION",
    shownDefault: "10s",
    group: "Node",
    help: "How often the node status is computed and the provider pinged.",
  }),
  o({
    key: "nodeStatusReportFrequency",
    flag: "node-status-report-frequency",
    env: ["VKUBELET_NODE_STATUS_REPORT_FREQUENCY"],
    kind: "string",
    value: "DURATION",
    shownDefault: "1m",
    group: "Node",
    help: "The node status is written at least this often even when nothing changed.",
  }),
  o({
    key: "recreateNode",
    flag: "recreate-node",
    env: ["VKUBELET_RECREATE_NODE"],
    kind: "boolean",
    shownDefault: "true",
    group: "Node",
    help: "Create the Node again if someone deletes it (--recreate-node=false to turn off).",
  }),
  o({
    key: "cordonOnShutdown",
    flag: "cordon-on-shutdown",
    env: ["VKUBELET_CORDON_ON_SHUTDOWN"],
    kind: "boolean",
    shownDefault: "false",
    group: "Node",
    help: "Mark the node unschedulable before stopping.",
  }),
  o({
    key: "providerOutageGrace",
    flag: "provider-outage-grace",
    env: ["VKUBELET_PROVIDER_OUTAGE_GRACE"],
    kind: "string",
    value: "DURATION",
    shownDefault: "30m",
    group: "Node",
    help: "While the provider's ping fails for less than this, the node stays Ready, tainted " +
      "virtual-kubelet.io/provider-unreachable:NoSchedule (cordoned under NodeRestriction) and " +
      "ProviderReachable=False, and pods keep their last status; then Ready turns False and " +
      "the pods are evicted as usual. 0: Ready False at the first failed ping.",
  }),
  o({
    key: "podSyncWorkers",
    flag: "pod-sync-workers",
    env: ["VKUBELET_POD_SYNC_WORKERS"],
    kind: "string",
    value: "N",
    shownDefault: "10",
    group: "Pods",
    help: "Pods synchronised with the provider in parallel.",
  }),
  o({
    key: "fullResyncPeriod",
    flag: "full-resync-period",
    env: ["VKUBELET_FULL_RESYNC_PERIOD"],
    kind: "string",
    value: "DURATION",
    shownDefault: "1m",
    group: "Pods",
    help: "How often every pod is checked against the provider again; 0 turns it off.",
  }),
  o({
    key: "daemonSetPods",
    flag: "daemonset-pods",
    env: ["VKUBELET_DAEMONSET_PODS"],
    kind: "string",
    value: "skip|run",
    shownDefault: "skip",
    group: "Pods",
    help: "Pods of DaemonSets: skip leaves them Pending with one event (no create/fail loop), " +
      "run hands them to the provider like any pod.",
  }),
  o({
    key: "listenAddress",
    flag: "listen-address",
    env: ["VKUBELET_LISTEN_ADDRESS"],
    kind: "string",
    value: "IP",
    shownDefault: "0.0.0.0",
    group: "Kubelet API",
    help: "Address the kubelet API listens on (127.0.0.1 keeps it on loopback).",
  }),
  o({
    key: "port",
    flag: "port",
    env: ["KUBELET_PORT"],
    kind: "string",
    value: "PORT",
    shownDefault: "10250",
    group: "Kubelet API",
    help: "Port of the kubelet API, announced in the node's daemonEndpoints; 0 picks a free one.",
  }),
  o({
    key: "tlsCertFile",
    flag: "tls-cert-file",
    env: ["APISERVER_CERT_LOCATION"],
    kind: "string",
    value: "PATH",
    group: "Kubelet API",
    help: "PEM serving certificate (with its chain) of the kubelet API.",
  }),
  o({
    key: "tlsPrivateKeyFile",
    flag: "tls-private-key-file",
    env: ["APISERVER_KEY_LOCATION"],
    kind: "string",
    value: "PATH",
    group: "Kubelet API",
    help: "PEM private key of --tls-cert-file.",
  }),
  o({
    key: "tlsSelfSigned",
    flag: "tls-self-signed",
    env: ["VKUBELET_TLS_SELF_SIGNED"],
    kind: "boolean",
    shownDefault: "false",
    group: "Kubelet API",
    help: "Serve with a certificate signed by itself (only if the API server does not verify it).",
  }),
  o({
    key: "rotateServerCertificates",
    flag: "rotate-server-certificates",
    env: ["VKUBELET_ROTATE_SERVER_CERTIFICATES"],
    kind: "boolean",
    shownDefault: "true unless --tls-cert-file or --tls-self-signed",
    group: "Kubelet API",
    help:
      "Get the serving certificate through a kubelet-serving CSR at start-up, keep it in --cert-dir and renew it at 70-90 % of its lifetime.",
  }),
  o({
    key: "certDir",
    flag: "cert-dir",
    env: ["VKUBELET_CERT_DIR"],
    kind: "string",
    value: "DIR",
    shownDefault: "$STATE_DIRECTORY/pki, /var/lib/vkubelet/pki or ~/.local/state/vkubelet/pki",
    group: "Kubelet API",
    help:
      "Keeps the certificates CSRs got, for reuse across restarts (NODE-server-current.pem, NODE-client-current.pem, 0600).",
  }),
  o({
    key: "clientCaFile",
    flag: "client-ca-file",
    env: ["APISERVER_CA_CERT_LOCATION"],
    kind: "string",
    value: "PATH",
    shownDefault: "the cluster CA from the kubeconfig",
    group: "Kubelet API",
    help:
      "CA bundle that client certificates of kubelet API callers must chain to. Without it the kubeconfig's cluster CA is trusted for them too, with a warning.",
  }),
  o({
    key: "anonymousAuth",
    flag: "anonymous-auth",
    env: ["VKUBELET_ANONYMOUS_AUTH"],
    kind: "boolean",
    shownDefault: "false",
    group: "Kubelet API",
    help: "Let requests without credentials through as system:anonymous (still authorized).",
  }),
  o({
    key: "authorizationMode",
    flag: "authorization-mode",
    env: ["VKUBELET_AUTHORIZATION_MODE"],
    kind: "string",
    value: "Webhook|AlwaysAllow",
    shownDefault: "Webhook",
    group: "Kubelet API",
    help: "Webhook asks the API server (SubjectAccessReview); AlwaysAllow allows every caller.",
  }),
  o({
    key: "streamIdleTimeout",
    flag: "stream-idle-timeout",
    env: ["VKUBELET_STREAM_IDLE_TIMEOUT"],
    kind: "string",
    value: "DURATION",
    shownDefault: "30s",
    group: "Kubelet API",
    help: "Close exec/attach/port-forward connections idle for this long; 0 never.",
  }),
  o({
    key: "streamCreationTimeout",
    flag: "stream-creation-timeout",
    env: ["VKUBELET_STREAM_CREATION_TIMEOUT"],
    kind: "string",
    value: "DURATION",
    shownDefault: "30s",
    group: "Kubelet API",
    help: "How long a client may take to open the streams of a session.",
  }),
  o({
    key: "metricsAddr",
    flag: "metrics-addr",
    env: ["VKUBELET_METRICS_ADDR"],
    kind: "string",
    value: "HOST:PORT",
    shownDefault: "off; e.g. 127.0.0.1:10255, or :10255 on every interface (no secrets are served)",
    group: "Kubelet API",
    help:
      "Serve /metrics and /healthz (503 while provider pings fail) over plain HTTP, unauthenticated.",
  }),
  o({
    key: "logLevel",
    flag: "log-level",
    env: ["VKUBELET_LOG_LEVEL"],
    kind: "string",
    value: "LEVEL",
    shownDefault: "info",
    group: "Logging",
    help: "trace, debug, info, warning (or warn), error or fatal.",
  }),
  o({
    key: "logFormat",
    flag: "log-format",
    env: ["VKUBELET_LOG_FORMAT"],
    kind: "string",
    value: "text|json",
    shownDefault: "text",
    group: "Logging",
    help: "text for people, json (one object per line) for log collectors.",
  }),
  o({
    key: "traceExporter",
    flag: "trace-exporter",
    env: ["VKUBELET_TRACE_EXPORTER"],
    kind: "string",
    value: "otlp",
    shownDefault: "off, or otlp when OTEL_EXPORTER_OTLP_ENDPOINT is set",
    group: "Logging",
    help:
      "Send OpenTelemetry traces (pod syncs, kubelet API requests) over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4318).",
  }),
  o({
    key: "traceSampleRate",
    flag: "trace-sample-rate",
    env: ["VKUBELET_TRACE_SAMPLE_RATE"],
    kind: "string",
    value: "always|never|0-100",
    shownDefault: "100 (always)",
    group: "Logging",
    help: "Share of new traces kept, in percent, as virtual-kubelet's flag takes it.",
  }),
  o({
    key: "nativeHeapTrim",
    flag: "native-heap-trim",
    env: ["VKUBELET_NATIVE_HEAP_TRIM"],
    kind: "boolean",
    shownDefault: "true",
    group: "General",
    help:
      "Give glibc's free heap pages back to the system every 10 s (malloc_trim). It needs the FFI grant for the C library, which can call any libc function; with false, run without --allow-ffi.",
  }),
  // Leader election (issue 21): replicas of one node (or one set of --nodes), one of them writing.
  o({
    key: "leaderElect",
    flag: "leader-elect",
    env: ["VKUBELET_LEADER_ELECT"],
    kind: "boolean",
    shownDefault: "false",
    group: "General",
    help:
      "Run as one of several replicas of this node: only the holder of the Lease vkubelet-<node> writes; the others stand by warm. With --nodes the set has one Lease, named after its first node, and its leader serves every node.",
  }),
  o({
    key: "leaderElectLeaseDuration",
    flag: "leader-elect-lease-duration",
    env: ["VKUBELET_LEADER_ELECT_LEASE_DURATION"],
    kind: "string",
    value: "DURATION",
    shownDefault: "8s",
    group: "General",
    help:
      "How long a standby waits after the leader's last renewal before taking over (whole seconds).",
  }),
  o({
    key: "leaderElectRenewDeadline",
    flag: "leader-elect-renew-deadline",
    env: ["VKUBELET_LEADER_ELECT_RENEW_DEADLINE"],
    kind: "string",
    value: "DURATION",
    shownDefault: "6s",
    group: "General",
    help:
      "A leader that has not renewed for this long stops writing and stands by; shorter than the lease duration.",
  }),
  o({
    key: "leaderElectRetryPeriod",
    flag: "leader-elect-retry-period",
    env: ["VKUBELET_LEADER_ELECT_RETRY_PERIOD"],
    kind: "string",
    value: "DURATION",
    shownDefault: "1s",
    group: "General",
    help: "How often the leader renews and a standby tries to take the lease.",
  }),
  o({
    key: "leaderElectNamespace",
    flag: "leader-elect-namespace",
    env: ["VKUBELET_LEADER_ELECT_NAMESPACE"],
    kind: "string",
    value: "NAMESPACE",
    shownDefault: "kube-node-lease",
    group: "General",
    help: "Namespace of the leader election Lease.",
  }),
] as const satisfies readonly OptionSpec[];
