/**
 * The `k8s.aliyun.com/eci-*` annotations users put on pods, each as the CreateContainerGroup
 * parameter Alibaba's API metadata names (`tests/providers/eci/metadata/CreateContainerGroup.json`),
 * and GPU requests (`nvidia.com/gpu`), which ECI runs only on GPU instance types. An annotation
 * with a value ECI could not take fails the pod naming the annotation; none is dropped.
 *
 * | annotation | parameter |
 * | --- | --- |
 * | `eci-use-specs` | `InstanceType` (ECS types, comma-separated), or one `<vCPU>-<GiB>Gi` as `Cpu`/`Memory` |
 * | `eci-spot-strategy`, `eci-spot-price-limit` | `SpotStrategy`, `SpotPriceLimit` |
 * | `eci-image-snapshot-id`, `eci-auto-imc` | `ImageSnapshotId`, `AutoMatchImageCache` |
 * | `eci-ram-role-name` | `RamRoleName` |
 * | `eci-with-eip`, `eci-eip-instanceid` | `AutoCreateEip`, `EipInstanceId` |
 * | `eci-extra-ephemeral-storage` | `EphemeralStorage` (GiB) |
 * | `eci-vswitch`, `eci-security-group` | `VSwitchId`, `SecurityGroupId` (instead of the config's) |
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError, quantityToNumber } from "../../../provider/mod.ts";

const PREFIX = "k8s.aliyun.com/";
const GIB = 1024 ** 3;

/** The CreateContainerGroup parameters the annotations set (the SDK's names). */
export interface AnnotationParams {
  instanceType?: string;
  cpu?: number;
  memory?: number;
  spotStrategy?: string;
  spotPriceLimit?: number;
  imageSnapshotId?: string;
  autoMatchImageCache?: boolean;
  ramRoleName?: string;
  autoCreateEip?: boolean;
  eipInstanceId?: string;
  ephemeralStorage?: number;
  vSwitchId?: string;
  securityGroupId?: string;
}

function refuse(key: string, value: string, why: string): never {
  throw new InvalidInputError(
    `metadata.annotations[${PREFIX}${key}]: ${JSON.stringify(value)} ${why}`,
  );
}

function bool(key: string, value: string): boolean {
  if (value !== "true" && value !== "false") refuse(key, value, "must be true or false");
  return value === "true";
}

/** `eci-use-specs`: ECS instance types, or one vCPU-memory specification. */
function specs(value: string): Pick<AnnotationParams, "instanceType" | "cpu" | "memory"> {
  const items = value.split(",").map((s) => s.trim()).filter(Boolean);
  const sized = items.filter((s) => /^\d+(\.\d+)?-\d+(\.\d+)?Gi$/.test(s));
  const types = items.filter((s) => /^ecs\.[a-z0-9-]+\.[a-z0-9-]+$/.test(s));
  if (!items.length || sized.length + types.length !== items.length) {
    refuse(
      "eci-use-specs",
      value,
      "is not a list of ECS instance types (ecs.c6.large) or a vCPU-memory specification (2-4Gi)",
    );
  }
  if (sized.length && (types.length || sized.length > 1)) {
    refuse(
      "eci-use-specs",
      value,
      "mixes specifications: CreateContainerGroup takes one Cpu/Memory pair or a list of InstanceType, not both or several pairs; give one 2-4Gi form or only instance types",
    );
  }
  if (types.length > 5) refuse("eci-use-specs", value, "names more than 5 instance types");
  if (types.length) return { instanceType: types.join(",") };
  const [cpu, memory] = sized[0].replace(/Gi$/, "").split("-").map(Number);
  return { cpu, memory };
}

function spot(
  a: Record<string, string>,
): Pick<AnnotationParams, "spotStrategy" | "spotPriceLimit"> {
  const strategy = a[`${PREFIX}eci-spot-strategy`];
  const limit = a[`${PREFIX}eci-spot-price-limit`];
  const strategies = ["NoSpot", "SpotAsPriceGo", "SpotWithPriceLimit"];
  if (strategy !== undefined && !strategies.includes(strategy)) {
    refuse("eci-spot-strategy", strategy, `is not one of ${strategies.join(", ")}`);
  }
  if (limit === undefined) {
    if (strategy === "SpotWithPriceLimit") {
      refuse(
        "eci-spot-strategy",
        strategy,
        `needs ${PREFIX}eci-spot-price-limit (the highest hourly price)`,
      );
    }
    return strategy ? { spotStrategy: strategy } : {};
  }
  const price = Number(limit);
  if (!(price > 0) || !/^\d+(\.\d+)?$/.test(limit)) {
    refuse("eci-spot-price-limit", limit, "is not a positive price such as 0.25");
  }
  if (strategy !== "SpotWithPriceLimit") {
    refuse(
      "eci-spot-price-limit",
      limit,
      `applies only with ${PREFIX}eci-spot-strategy: SpotWithPriceLimit`,
    );
  }
  return { spotStrategy: strategy, spotPriceLimit: price };
}

function eip(a: Record<string, string>): Pick<AnnotationParams, "autoCreateEip" | "eipInstanceId"> {
  const withEip = a[`${PREFIX}eci-with-eip`];
  const id = a[`${PREFIX}eci-eip-instanceid`];
  const create = withEip === undefined ? undefined : bool("eci-with-eip", withEip);
  if (id !== undefined && !/^eip-[a-z0-9]+$/.test(id)) {
    refuse("eci-eip-instanceid", id, "is not an EIP instance ID such as eip-bp1q5v0v1k8mxxxx");
  }
  if (create && id !== undefined) {
    refuse(
      "eci-with-eip",
      withEip!,
      `asks ECI to create an EIP while ${PREFIX}eci-eip-instanceid binds an existing one; keep one`,
    );
  }
  return {
    ...(create !== undefined ? { autoCreateEip: create } : {}),
    ...(id !== undefined ? { eipInstanceId: id } : {}),
  };
}

function ephemeral(value: string): number {
  const bytes = quantityToNumber(value);
  if (bytes === undefined || bytes <= 0) {
    refuse("eci-extra-ephemeral-storage", value, "is not a positive quantity such as 50Gi");
  }
  return Math.ceil(bytes / GIB);
}

function ids(key: string, value: string, prefix: string, several: boolean): string {
  const items = value.split(",").map((s) => s.trim());
  const pattern = new RegExp(`^${prefix}-[a-z0-9]+$`);
  if (!items.every((s) => pattern.test(s)) || (!several && items.length > 1)) {
    refuse(
      key,
      value,
      `is not ${several ? "a comma-separated list of IDs" : "an ID"} such as ${prefix}-bp1xxxx`,
    );
  }
  return items.join(",");
}

/** The CreateContainerGroup parameters the pod's `k8s.aliyun.com/eci-*` annotations ask for. */
export function annotationParams(pod: Pod): AnnotationParams {
  const a = pod.metadata?.annotations ?? {};
  const get = (key: string) => a[`${PREFIX}${key}`];
  const out: AnnotationParams = { ...spot(a), ...eip(a) };
  const useSpecs = get("eci-use-specs");
  if (useSpecs !== undefined) Object.assign(out, specs(useSpecs));
  const snapshot = get("eci-image-snapshot-id");
  if (snapshot !== undefined) {
    if (!/^imc-[a-z0-9]+$/.test(snapshot)) {
      refuse("eci-image-snapshot-id", snapshot, "is not an image cache ID such as imc-bp1xxxx");
    }
    out.imageSnapshotId = snapshot;
  }
  const imc = get("eci-auto-imc");
  if (imc !== undefined) out.autoMatchImageCache = bool("eci-auto-imc", imc);
  const role = get("eci-ram-role-name");
  if (role !== undefined) {
    if (!/^[A-Za-z0-9.-]{1,64}$/.test(role)) {
      refuse("eci-ram-role-name", role, "is not a RAM role name (letters, digits, '.', '-')");
    }
    out.ramRoleName = role;
  }
  const storage = get("eci-extra-ephemeral-storage");
  if (storage !== undefined) out.ephemeralStorage = ephemeral(storage);
  const vswitch = get("eci-vswitch");
  if (vswitch !== undefined) out.vSwitchId = ids("eci-vswitch", vswitch, "vsw", true);
  const group = get("eci-security-group");
  if (group !== undefined) out.securityGroupId = ids("eci-security-group", group, "sg", false);
  return out;
}

/**
 * A container's `nvidia.com/gpu` (the larger of request and limit) as `Container.N.Gpu`. ECI
 * runs GPU containers only on a GPU instance type, which the pod must name in `eci-use-specs`:
 * the metadata gives no way to ask for "any GPU type", and vkubelet does not guess one.
 */
export function gpuCount(
  pod: Pod,
  c: { resources?: { requests?: Record<string, string>; limits?: Record<string, string> } },
  field: string,
): number | undefined {
  let most = 0;
  for (const kind of ["requests", "limits"] as const) {
    const text = c.resources?.[kind]?.["nvidia.com/gpu"];
    if (text === undefined) continue;
    const n = Number(text);
    if (!Number.isInteger(n) || n < 0) {
      throw new InvalidInputError(
        `${field}.resources.${kind}.nvidia.com/gpu: ${text} is not a whole number of GPUs`,
      );
    }
    most = Math.max(most, n);
  }
  if (!most) return undefined;
  const specs = pod.metadata?.annotations?.[`${PREFIX}eci-use-specs`] ?? "";
  if (!/\becs\.(gn|vgn|ebmgn|sgn)[a-z0-9-]*\./.test(specs)) {
    throw new InvalidInputError(
      `${field}.resources.limits.nvidia.com/gpu: ECI runs GPU containers only on GPU instance types; name one in the annotation ${PREFIX}eci-use-specs (for example ecs.gn6i-c4g1.xlarge)`,
    );
  }
  return most;
}
