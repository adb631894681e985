/**
 * The `k8s.aliyun.com/eci-*` annotations, GPU requests, NFS and disk volumes and the cluster's
 * DNS, as the SDK sends them to the emulator, which refuses any parameter Alibaba's
 * CreateContainerGroup metadata does not name; values ECI could not take fail the pod naming
 * the annotation.
 */
import assert from "node:assert/strict";
import type { PersistentVolume, PersistentVolumeClaim } from "kubernetes-types/core/v1.d.ts";
import { isInvalidInput, type ProviderKubeClient } from "../../../provider/mod.ts";
import { eciPod, startProviderOnEmulator } from "../../../tools/harness/eci/env.ts";

function annotated(name: string, annotations: Record<string, string>, spec = {}) {
  const pod = eciPod(name, spec);
  pod.metadata!.annotations = annotations;
  return pod;
}

Deno.test("each eci-* annotation reaches CreateContainerGroup as the parameter the metadata names", async () => {
  const env = await startProviderOnEmulator();
  try {
    await env.provider.createPod(
      annotated("spot", {
        "k8s.aliyun.com/eci-use-specs": "ecs.c6.large,ecs.g6.large",
        "k8s.aliyun.com/eci-spot-strategy": "SpotWithPriceLimit",
        "k8s.aliyun.com/eci-spot-price-limit": "0.25",
        "k8s.aliyun.com/eci-image-snapshot-id": "imc-bp1abc",
        "k8s.aliyun.com/eci-auto-imc": "false",
        "k8s.aliyun.com/eci-ram-role-name": "app-role",
        "k8s.aliyun.com/eci-eip-instanceid": "eip-bp1xyz",
        "k8s.aliyun.com/eci-extra-ephemeral-storage": "50Gi",
        "k8s.aliyun.com/eci-vswitch": "vsw-a1,vsw-b2",
        "k8s.aliyun.com/eci-security-group": "sg-pod1",
      }),
      {},
    );
    await env.provider.createPod(
      annotated("sized", {
        "k8s.aliyun.com/eci-use-specs": "2-4Gi",
        "k8s.aliyun.com/eci-with-eip": "true",
      }),
      {},
    );
    assert.deepEqual(env.emu.strays, [], "every parameter is in Alibaba's metadata");
    const params = (name: string) =>
      [...env.emu.groups.values()].find((g) => g.params.get("ContainerGroupName")?.includes(name))!
        .params;
    const p = params("spot");
    assert.equal(p.get("InstanceType"), "ecs.c6.large,ecs.g6.large");
    assert.equal(p.get("Cpu"), undefined, "an instance type sizes the group itself");
    assert.equal(p.get("SpotStrategy"), "SpotWithPriceLimit");
    assert.equal(p.get("SpotPriceLimit"), "0.25");
    assert.equal(p.get("ImageSnapshotId"), "imc-bp1abc");
    assert.equal(p.get("AutoMatchImageCache"), "false");
    assert.equal(p.get("RamRoleName"), "app-role");
    assert.equal(p.get("EipInstanceId"), "eip-bp1xyz");
    assert.equal(p.get("EphemeralStorage"), "50");
    assert.equal(p.get("VSwitchId"), "vsw-a1,vsw-b2");
    assert.equal(p.get("SecurityGroupId"), "sg-pod1");
    const s = params("sized");
    assert.deepEqual([s.get("Cpu"), s.get("Memory")], ["2", "4"]);
    assert.equal(s.get("AutoCreateEip"), "true");
    assert.equal(s.get("VSwitchId"), "vsw-test1", "the config's without an annotation");
  } finally {
    await env.close();
  }
});

Deno.test("invalid eci-* annotations fail the pod naming the annotation; nothing is created", async () => {
  const env = await startProviderOnEmulator();
  try {
    const cases: [Record<string, string>, RegExp][] = [
      [{ "k8s.aliyun.com/eci-use-specs": "big" }, /eci-use-specs.*"big"/],
      [{ "k8s.aliyun.com/eci-use-specs": "2-4Gi,ecs.c6.large" }, /eci-use-specs.*not both/],
      [{ "k8s.aliyun.com/eci-use-specs": "0.25-0.5Gi" }, /0\.25-0\.5Gi is smaller than/],
      [{ "k8s.aliyun.com/eci-spot-strategy": "Cheap" }, /eci-spot-strategy.*SpotAsPriceGo/],
      [
        { "k8s.aliyun.com/eci-spot-strategy": "SpotWithPriceLimit" },
        /needs .*eci-spot-price-limit/,
      ],
      [{ "k8s.aliyun.com/eci-spot-price-limit": "0.3" }, /only with .*SpotWithPriceLimit/],
      [{ "k8s.aliyun.com/eci-auto-imc": "yes" }, /eci-auto-imc.*true or false/],
      [{ "k8s.aliyun.com/eci-image-snapshot-id": "snap" }, /eci-image-snapshot-id/],
      [
        { "k8s.aliyun.com/eci-with-eip": "true", "k8s.aliyun.com/eci-eip-instanceid": "eip-x1" },
        /eci-with-eip.*keep one/,
      ],
      [{ "k8s.aliyun.com/eci-extra-ephemeral-storage": "lots" }, /eci-extra-ephemeral-storage/],
      [{ "k8s.aliyun.com/eci-vswitch": "subnet-1" }, /eci-vswitch/],
      [{ "k8s.aliyun.com/eci-security-group": "sg-a,sg-b" }, /eci-security-group/],
    ];
    const big = {
      containers: [{ name: "main", image: "b", resources: { requests: { cpu: "1" } } }],
    };
    for (const [i, [annotations, message]] of cases.entries()) {
      await assert.rejects(
        env.provider.createPod(annotated(`bad-${i}`, annotations, big), {}),
        (err: Error) => isInvalidInput(err) && message.test(err.message),
        JSON.stringify(annotations),
      );
    }
    assert.equal(env.emu.groups.size, 0);
  } finally {
    await env.close();
  }
});

Deno.test("a GPU request needs a GPU instance type: Container.N.Gpu with it, refused without", async () => {
  const env = await startProviderOnEmulator();
  try {
    const gpu = {
      containers: [{
        name: "main",
        image: "cuda",
        resources: { limits: { "nvidia.com/gpu": "1", cpu: "4", memory: "15Gi" } },
      }],
    };
    await assert.rejects(
      env.provider.createPod(annotated("no-type", {}, gpu), {}),
      (err: Error) =>
        isInvalidInput(err) &&
        /nvidia\.com\/gpu: ECI runs GPU containers only on GPU instance types.*eci-use-specs/.test(
          err.message,
        ),
    );
    await env.provider.createPod(
      annotated("trainer", { "k8s.aliyun.com/eci-use-specs": "ecs.gn6i-c4g1.xlarge" }, gpu),
      {},
    );
    assert.deepEqual(env.emu.strays, []);
    const [group] = [...env.emu.groups.values()];
    assert.equal(group.params.get("Container.1.Gpu"), "1");
    assert.equal(group.params.get("InstanceType"), "ecs.gn6i-c4g1.xlarge");
  } finally {
    await env.close();
  }
});

Deno.test("NFS, NAS and disk volumes reach ECI as NFSVolume and DiskVolume; ClusterFirst pods get the cluster's DNS", async () => {
  const claims: Record<string, string> = { nas: "pv-nas", disk: "pv-disk" };
  const volumes: Record<string, PersistentVolume> = {
    "pv-nas": {
      spec: {
        csi: {
          driver: "nasplugin.csi.alibabacloud.com",
          volumeHandle: "pv-nas",
          volumeAttributes: { server: "0cd8b4a576-g.cn-hangzhou.nas.aliyuncs.com", path: "/k8s" },
        },
      },
    },
    "pv-disk": {
      spec: {
        csi: {
          driver: "diskplugin.csi.alibabacloud.com",
          volumeHandle: "d-bp1disk",
          fsType: "ext4",
        },
      },
    },
  };
  const kube = {
    persistentVolumeClaims: {
      get: (_ns: string, name: string) =>
        Promise.resolve({ spec: { volumeName: claims[name] } } as PersistentVolumeClaim),
    },
    persistentVolumes: { get: (name: string) => Promise.resolve(volumes[name]) },
  } as unknown as ProviderKubeClient;
  const env = await startProviderOnEmulator({ clusterDNS: ["172.21.0.10"] }, kube);
  try {
    await env.provider.createPod(
      eciPod("storage", {
        dnsConfig: { options: [{ name: "ndots", value: "2" }] },
        volumes: [
          { name: "share", nfs: { server: "10.0.0.5", path: "/exports", readOnly: true } },
          { name: "nas", persistentVolumeClaim: { claimName: "nas" } },
          { name: "disk", persistentVolumeClaim: { claimName: "disk" } },
        ],
      }),
      {},
    );
    assert.deepEqual(env.emu.strays, []);
    const [group] = [...env.emu.groups.values()];
    const p = group.params;
    assert.equal(p.get("Volume.1.Type"), "NFSVolume");
    assert.equal(p.get("Volume.1.NFSVolume.Server"), "10.0.0.5");
    assert.equal(p.get("Volume.1.NFSVolume.Path"), "/exports");
    assert.equal(p.get("Volume.1.NFSVolume.ReadOnly"), "true");
    assert.equal(p.get("Volume.2.NFSVolume.Server"), "0cd8b4a576-g.cn-hangzhou.nas.aliyuncs.com");
    assert.equal(p.get("Volume.3.Type"), "DiskVolume");
    assert.equal(p.get("Volume.3.DiskVolume.DiskId"), "d-bp1disk");
    assert.equal(p.get("Volume.3.DiskVolume.FsType"), "ext4");
    // pkg/kubelet/network/dns/dns.go: the cluster's searches, then ndots as the pod overrides it.
    assert.equal(p.get("DnsPolicy"), "None");
    assert.equal(p.get("DnsConfig.NameServer.1"), "172.21.0.10");
    assert.deepEqual(
      [1, 2, 3].map((i) => p.get(`DnsConfig.Search.${i}`)),
      ["team-a.svc.cluster.local", "svc.cluster.local", "cluster.local"],
    );
    assert.deepEqual([p.get("DnsConfig.Option.1.Name"), p.get("DnsConfig.Option.1.Value")], [
      "ndots",
      "2",
    ]);
    await assert.rejects(
      env.provider.createPod(
        eciPod("hostpath", { volumes: [{ name: "h", hostPath: { path: "/var" } }] }),
        {},
      ),
      (err: Error) =>
        isInvalidInput(err) && /hostPath volumes are not supported.*nfs/.test(err.message),
    );
  } finally {
    await env.close();
  }
});
