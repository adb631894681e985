/**
 * What the kubelet checks before it starts containers, against the real control plane through
 * `main.ts` with the mock provider: a missing Secret volume (FailedMount, ContainerCreating,
 * backoff, start once it exists), a missing PersistentVolumeClaim, an image reference that does
 * not parse (InvalidImageName), and a missing mandatory ConfigMap (Failed plus
 * MandatoryConfigMapNotFound).
 * @module
 */
import assert from "node:assert/strict";
import type { Event, Pod } from "kubernetes-types/core/v1.d.ts";
import { useCluster } from "../../../tools/cluster/harness.ts";
import { startVkubelet } from "../../../tools/cluster/vkubelet.ts";
import { eventually } from "../../../tools/harness/wait.ts";

Deno.test("preflight: missing volume sources, invalid images and mandatory config refs as the kubelet reports them", async (t) => {
  const cluster = await useCluster();
  const nodeName = `vk-preflight-${crypto.randomUUID().slice(0, 6)}`;
  const ns = await cluster.newNamespace("preflight");
  const kubectl = cluster.kubectlIn(ns);
  const placement = {
    nodeSelector: { "kubernetes.io/hostname": nodeName },
    tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
  };
  const create = (name: string, spec: Record<string, unknown>) =>
    kubectl(
      ["create", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name },
        spec: { ...placement, ...spec },
      }),
    );
  const getPod = async (name: string): Promise<Pod> =>
    JSON.parse(await kubectl(["get", "pod", name, "-o", "json"]));
  const events = async (name: string, reason: string): Promise<Event[]> =>
    JSON.parse(
      await kubectl([
        "get",
        "events",
        "--field-selector",
        `involvedObject.name=${name},reason=${reason}`,
        "-o",
        "json",
      ]),
    ).items;
  const vk = await startVkubelet(cluster, { nodeName });
  try {
    await t.step(
      "a missing Secret volume: ContainerCreating, FailedMount backing off, then Running",
      async () => {
        await create("secret-vol", {
          containers: [{
            name: "main",
            image: "busybox",
            volumeMounts: [{ name: "creds", mountPath: "/c" }],
          }],
          volumes: [{ name: "creds", secret: { secretName: "nope" } }],
        });
        const [event] = await eventually("a FailedMount event", async () => {
          const found = await events("secret-vol", "FailedMount");
          return found.length ? found : undefined;
        });
        assert.equal(event.type, "Warning");
        assert.equal(
          event.message,
          'MountVolume.SetUp failed for volume "creds" : secret "nope" not found',
        );
        await new Promise((r) => setTimeout(r, 10_000));
        const pod = await getPod("secret-vol");
        assert.equal(pod.status?.phase, "Pending");
        assert.equal(
          pod.status?.containerStatuses?.[0].state?.waiting?.reason,
          "ContainerCreating",
        );
        const attempts = (await events("secret-vol", "FailedMount")).reduce(
          (n, e) => n + (e.count ?? 1),
          0,
        );
        assert.ok(attempts >= 2 && attempts <= 10, `${attempts} FailedMount events in about 10 s`);
        await kubectl(["create", "secret", "generic", "nope", "--from-literal=k=v"]);
        await eventually(
          "the pod Running once the Secret exists",
          async () => (await getPod("secret-vol")).status?.phase === "Running" ? true : undefined,
        );
      },
    );

    await t.step(
      "a missing PersistentVolumeClaim: Pending with the volume manager's FailedMount",
      async () => {
        // The scheduler holds a pod whose claim is missing: bind it to the node directly.
        await create("claim-vol", {
          nodeName,
          containers: [{ name: "main", image: "busybox" }],
          volumes: [{ name: "data", persistentVolumeClaim: { claimName: "data-0" } }],
        });
        const [event] = await eventually("a FailedMount event", async () => {
          const found = await events("claim-vol", "FailedMount");
          return found.length ? found : undefined;
        });
        assert.equal(
          event.message,
          "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], " +
            `failed to process volumes=[data]: error processing PVC ${ns}/data-0: failed to fetch ` +
            'PVC from API server: persistentvolumeclaims "data-0" not found',
        );
        assert.equal((await getPod("claim-vol")).status?.phase, "Pending");
      },
    );

    await t.step(
      "an invalid image: waiting InvalidImageName, an InspectFailed event, never run",
      async () => {
        const image = "Not A//Valid::Image@@sha256:zz";
        await create("bad-image", { containers: [{ name: "main", image }] });
        const message = `Failed to apply default image tag "${image}": couldn't parse image name ` +
          `"${image}": invalid reference format: repository name (/Valid) must be lowercase`;
        const [event] = await eventually("an InspectFailed event", async () => {
          const found = await events("bad-image", "InspectFailed");
          return found.length ? found : undefined;
        });
        assert.equal(event.type, "Warning");
        assert.equal(event.message, message);
        assert.equal(event.involvedObject.fieldPath, "spec.containers{main}");
        const waiting = await eventually("the container waiting InvalidImageName", async () => {
          const state = (await getPod("bad-image")).status?.containerStatuses?.[0].state?.waiting;
          return state?.reason === "InvalidImageName" ? state : undefined;
        });
        assert.equal(waiting.message, message);
        await new Promise((r) => setTimeout(r, 3_000));
        const pod = await getPod("bad-image");
        assert.equal(pod.status?.phase, "Pending");
        assert.equal(pod.status?.podIP, undefined, "the provider never ran it");
      },
    );

    await t.step(
      "a missing mandatory ConfigMap: Failed and MandatoryConfigMapNotFound",
      async () => {
        await create("needs-cfg", {
          containers: [{
            name: "main",
            image: "busybox",
            env: [{ name: "A", valueFrom: { configMapKeyRef: { name: "absent", key: "a" } } }],
          }],
        });
        const [mandatory] = await eventually("a MandatoryConfigMapNotFound event", async () => {
          const found = await events("needs-cfg", "MandatoryConfigMapNotFound");
          return found.length ? found : undefined;
        });
        assert.equal(mandatory.type, "Warning");
        assert.equal(mandatory.message, 'configmap "absent" not found');
        const [failed] = await events("needs-cfg", "Failed");
        assert.equal(failed?.message, 'Error: configmap "absent" not found');
        const pod = await getPod("needs-cfg");
        assert.equal(
          pod.status?.containerStatuses?.[0].state?.waiting?.reason,
          "CreateContainerConfigError",
        );
      },
    );
  } finally {
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    const { code } = await vk.stop("SIGTERM");
    assert.equal(code, 0, vk.output());
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
  }
});
