/**
 * A test host for the process provider's pod networks: a network namespace the test makes (the
 * root namespace's interfaces, routes and nft tables are never touched), a CNI bridge conflist
 * whose plugins the provider runs inside it (`network.hostNetns`), host-local leases in a
 * temporary directory, and the reference plugins built into `.cache/cni/bin` on first use
 * (tools/network/build_cni.sh). Every address is in 198.18.0.0/15. Root only.
 * @module
 */
import { join } from "node:path";

const root = new URL("../../../", import.meta.url).pathname;

/** Why the network tests cannot run here, or undefined. */
export function networkSkipReason(): string | undefined {
  if (Deno.uid() !== 0) return "needs root (network namespaces, CNI plugins)";
  for (const tool of ["ip", "socat", "curl", "nsenter", "go"]) {
    const found = ["/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/go/bin", "/usr/local/bin"]
      .some((dir) => {
        try {
          return Deno.statSync(join(dir, tool)).isFile;
        } catch {
          return false;
        }
      });
    if (!found) return `needs ${tool}`;
  }
  return undefined;
}

let built: string | undefined;

/** The CNI plugins' directory, built once. */
export async function cniBinDir(): Promise<string> {
  if (built) return built;
  const out = await new Deno.Command("bash", {
    args: [join(root, "tools/network/build_cni.sh")],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`building the CNI plugins failed: ${new TextDecoder().decode(out.stderr)}`);
  }
  built = new TextDecoder().decode(out.stdout).trim();
  return built;
}

/** Runs a command; its trimmed stdout, or throws with stderr. */
export async function sh(cmd: string, ...args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
  return text;
}

/** Like {@link sh}, but the exit code and output, never a throw. */
export async function tryRun(cmd: string, ...args: string[]) {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  const dec = new TextDecoder();
  return {
    code: out.code,
    stdout: dec.decode(out.stdout).trim(),
    stderr: dec.decode(out.stderr).trim(),
  };
}

let labs = 0;

/** A test host netns with a CNI config; `close` removes every trace. */
export async function networkLab(options: { subnet?: number } = {}) {
  const n = options.subnet ?? (100 + (Deno.pid + labs++) % 100);
  const name = `vkt-h${Deno.pid % 10000}-${labs}`;
  const dir = await Deno.makeTempDir({ prefix: "vk-net-lab-" });
  const bin = await cniBinDir();
  await sh("ip", "netns", "add", name);
  const inHost = (...args: string[]) => sh("ip", "netns", "exec", name, ...args);
  await inHost("ip", "link", "set", "lo", "up");
  await inHost("sysctl", "-qw", "net.ipv4.ip_forward=1");
  const bridge = `vkt-br${n}`;
  const podCIDR = `198.19.${n}.0/24`;
  const conflist = {
    cniVersion: "1.1.0",
    name: `vkt-net${n}`,
    plugins: [
      {
        type: "bridge",
        bridge,
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: "host-local",
          dataDir: join(dir, "ipam"),
          routes: [{ dst: "0.0.0.0/0" }],
        },
        capabilities: { ipRanges: true },
      },
      { type: "portmap", backend: "nftables", capabilities: { portMappings: true } },
    ],
  };
  await Deno.mkdir(join(dir, "net.d"));
  await Deno.writeTextFile(join(dir, "net.d", "10-vkt.conflist"), JSON.stringify(conflist));
  await Deno.writeTextFile(
    join(dir, "resolv.conf"),
    "nameserver 198.18.0.53\nsearch example.test\n",
  );
  const network = {
    cniConfDir: join(dir, "net.d"),
    cniBinDir: bin,
    hostNetns: `/run/netns/${name}`,
    podCIDR,
    clusterDNS: ["198.18.96.10"],
    clusterDomain: "cluster.local",
    resolvConf: join(dir, "resolv.conf"),
    cniCacheDir: join(dir, "cache"),
  };
  return {
    name,
    dir,
    network,
    podCIDR,
    gateway: `198.19.${n}.1`,
    ipamDir: join(dir, "ipam", conflist.name),
    inHost,
    /** Interfaces in the host netns. */
    async links(): Promise<string[]> {
      return (await inHost("ip", "-o", "link", "show")).split("\n").map((l) =>
        l.split(": ")[1].split("@")[0]
      );
    },
    async close() {
      await tryRun("ip", "netns", "del", name);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}
