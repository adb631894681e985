/**
 * The provider kit: the contract a provider implements and the helpers that make one cheap to
 * write. Exported as `@vkubelet/vkubelet/provider`; a provider outside this repository imports
 * only this module (and Kubernetes types).
 * @module
 */
export type * from "./contract.ts";
export { POD_NETWORK_LOST_ERRORS, providerCapabilities } from "./contract.ts";
export type * from "./stats.ts";
export { formatGoFloat, metricsText } from "./metrics.ts";
export { podsSummary, type SummaryNode } from "./stats_summary.ts";
export {
  checkNamespaceAllows,
  type NamespaceAllowlist,
  type PodServiceAccount,
  podServiceAccount,
} from "./service_account_grant.ts";
export {
  formatMap,
  goQuote,
  type PodAddresses,
  resolveFieldRef,
  resolveResourceFieldRef,
  resolveVolumeFieldRef,
  type ResourceFieldRefOptions,
  type ResourceList,
} from "./downward_api.ts";
export {
  isKubeNotFound,
  type ProviderEventsApi,
  type ProviderInformer,
  type ProviderKubeClient,
  type ProviderObjectApi,
  type ProviderPersistentVolumesApi,
  type ProviderServiceAccountsApi,
} from "./kube_client.ts";
export { applyProviderNode, type ProviderNodeFields } from "./node.ts";
export {
  BackendUnreachableError,
  type BackendUnreachableOptions,
  InvalidInputError,
  isBackendUnreachable,
  isInvalidInput,
  isNotFound,
  isNotSupported,
  isTransient,
  NotFoundError,
  NotSupportedError,
  notSupportedText,
  type ProviderErrorOptions,
  refuseStreaming,
  type StreamingKind,
  TransientError,
  type TransientErrorOptions,
} from "./errors.ts";
export {
  backendUnreachable,
  type BackendUnreachableHelpOptions,
  redactCredentials,
} from "./unreachable.ts";
export {
  buildPodStatus,
  type ContainerReport,
  type ContainerStateReport,
  type PodStatusReport,
  terminalPodStatus,
  type TerminalStatusOptions,
  type TerminatedReport,
} from "./pod_status.ts";
export { isSidecar, isTerminalPhase } from "./pod_phase.ts";
export {
  type BackoffEntry,
  type BackoffOptions,
  backoffUntil,
  containerRestartPolicy,
  crashLoopWaiting,
  nextBackoff,
  type PlannedRestart,
  planRestart,
  podRestartPolicy,
  RESTART_BACKOFF_INITIAL_MS,
  RESTART_BACKOFF_MAX_MS,
  RestartBackoff,
  type RestartBackoffOptions,
  restartKey,
  type RestartPolicy,
  type RestartStep,
  restartStep,
  shouldRestart,
  shouldRestartPod,
} from "./restart.ts";
export { type PodEventSink, podEventSink } from "./events.ts";
export { unknownEnd, type UnknownEndCause, type UnknownEndOptions } from "./container_end.ts";
export {
  podKey,
  podKeyOf,
  PodStatusPush,
  PodTable,
  type PodTableOptions,
  type PodTableRecord,
} from "./pod_table.ts";
export {
  type RemoteBackend,
  type RemoteLogRuns,
  type RemoteMakeOptions,
  RemotePods,
  type RemotePodsOptions,
  type RemoteRead,
  type RemoteRun,
} from "./remote_pods.ts";
export { checkPodHooks, type HookMode, type PodHook, podHooks } from "./lifecycle_hooks.ts";
export {
  type NodeLabels,
  type RemotePodCalls,
  RemotePodsProvider,
  type RemoteProviderSetup,
} from "./remote_provider.ts";
/** The tag that marks a backend object as this node's pod, and where backends carry it. */
export {
  decodePodTag,
  encodePodTag,
  isDnsSubdomain,
  keyedPodTags,
  type PodTag,
  type PodTagCarrier,
  type PodTagKeys,
  podTagText,
  standInPod,
  type StandInSpec,
  tagMap,
} from "./pod_tags.ts";
export { qosClass } from "./qos.ts";
export { requestOrLimit } from "./resources.ts";
export { effectiveSecurityContext } from "./security_context.ts";
/** Whether a URL is safe for a credential: https, or plain http to this machine only. */
export { credentialUrlProblem } from "./credential_url.ts";
export { formatLogTime, linesToStream } from "./log_stream.ts";
export {
  CRI_MAX_LINE,
  CriLineSplitter,
  type CriRecord,
  criText,
  formatCriRecord,
  normalizeLogTime,
  parseCriRecord,
} from "./cri_log.ts";
export {
  ContainerLog,
  type ContainerLogFileOptions,
  readContainerLog,
  type ResumePoint,
  rotatedFiles,
  rotationStamp,
} from "./container_log.ts";
export { type ContainerLogTarget, PodLogDir, type PodLogDirOptions } from "./pod_log_dir.ts";
export { formatTime } from "../k8s/micro_time.ts";
export type { Clock } from "../base/clock.ts";
export type { Logger, LogProperties } from "./logger.ts";
export type { SignalOptions } from "../base/options.ts";
export type {
  InformerHandlers,
  InformerOptions,
  InNamespace,
  KubeObject,
  ListOptions,
  ListResult,
  ListWatchSource,
  ResourceInformerOptions,
  ResumableWatchOptions,
  WatchEvent,
  WatchOptions,
} from "../k8s/api_types.ts";
export { formatDuration, parseDuration } from "../base/duration.ts";
export { raceSignal } from "../base/cancel.ts";
export { halfClosing } from "../base/half_close.ts";
export { PolledFeeds, type PolledFeedsOptions } from "../base/polled_feeds.ts";
export {
  parseQuantity,
  type Quantity,
  quantityMilliValue,
  quantityToNumber,
  quantityValue,
} from "../k8s/quantity.ts";
export {
  type ConfigIssue,
  type ConfigSchema,
  formatConfigIssues,
  type ParseConfigOptions,
  type ParsedConfig,
  parseProviderConfig,
} from "./config.ts";
export { durationField, positiveQuantityField } from "./config_fields.ts";
