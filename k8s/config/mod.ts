/**
 * Where the client's connection comes from: kubeconfig files (kubectl's loading rules, contexts,
 * client certificates, tokens, token files, exec credential plugins, a client certificate that
 * rotates) or a pod's service account.
 *
 * ```ts
 * const config = await loadKubeConfig({ kubeconfig: flags.kubeconfig, context: flags.context });
 * ```
 * @module
 */
export * from "./types.ts";
export * from "./load.ts";
export * from "./resolve.ts";
export * from "./in_cluster.ts";
export * from "./kubeconfig_file.ts";
export * from "./exec_credential.ts";
export * from "./token_file.ts";
export * from "./client_certificate_source.ts";
