/**
 * The chart's value sets and `helm template` for the chart tests (helm_test.ts,
 * node_identity_test.ts).
 * @module
 */
import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import { chartDir, HA_VALUES, helm } from "../../tools/helm/manifests.ts";

/** A Kubernetes object as rendered. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [key: string]: unknown };
  // deno-lint-ignore no-explicit-any
  [key: string]: any;
}

/** The value sets: name -> `--set` arguments. */
export const VALUE_SETS: Record<string, string[]> = {
  defaults: [],
  ha: [...HA_VALUES],
  csr: [
    "--set=certificates.mode=csr",
    "--set=provider.name=kubernetes",
    "--set-string=provider.config.namespace=vk-b",
    "--set=nodeName=vk-csr",
  ],
  bootstrap: [
    "--set=certificates.mode=bootstrap",
    "--set=replicas=1",
    "--set=leaderElect=false",
    "--set=nodeName=vk-boot",
    "--set=bootstrap.token=abc123.0123456789abcdef",
    "--set=bootstrap.autoApprove=true",
  ],
};

/** `helm template` of the chart; the objects. */
export async function render(release: string, namespace: string, set: string[]) {
  const res = await helm(["template", release, chartDir, "--namespace", namespace, ...set]);
  assert.equal(res.code, 0, res.stderr);
  return {
    text: res.stdout,
    objects: parseAllDocuments(res.stdout).map((d) => d.toJS() as K8sObject).filter(Boolean),
  };
}
