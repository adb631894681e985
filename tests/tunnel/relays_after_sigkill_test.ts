/**
 * A vkubelet killed with SIGKILL leaves no relay behind: the `socat` that listened on a remote
 * pod's port inside its namespace (under nsenter) ends with the process that started it, so the
 * restarted vkubelet's relay is the one that binds the port, and closing it frees the port. The
 * first "vkubelet" is a subprocess that sets the pod up and listens, then is killed; the test
 * process restores the pod as a restarted vkubelet would. Real network namespaces in a test host
 * (198.19.x.0/24). Root only.
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { loadNetworkConfig } from "../../providers/process/network/cni.ts";
import { PodNetworks } from "../../providers/process/network/pod_network.ts";
import { RemotePodNetworks } from "../../providers/process/network/tunnel_network.ts";
import { remotePod } from "../../tools/tunnel/server.ts";
import { log } from "../../tools/harness/kubelet_api_fakes.ts";
import { networkLab, networkSkipReason } from "../providers/process/_network_lab.ts";

const skip = networkSkipReason();
if (skip) console.warn(`relays after SIGKILL test skipped: ${skip}`);

const root = new URL("../../", import.meta.url);
const PORT = 8080;

/** The first vkubelet: sets the pod up, listens on its port, prints what it saved, waits. */
const FIRST_VKUBELET = `
import { loadNetworkConfig } from "${new URL("providers/process/network/cni.ts", root)}";
import { PodNetworks } from "${new URL("providers/process/network/pod_network.ts", root)}";
import { RemotePodNetworks } from "${new URL("providers/process/network/tunnel_network.ts", root)}";
import { log } from "${new URL("tools/harness/kubelet_api_fakes.ts", root)}";
const { network, podCIDR, stateDir, pod, port } = JSON.parse(Deno.env.get("FIRST_VKUBELET"));
const list = await loadNetworkConfig(network.cniConfDir);
const networks = new PodNetworks(network, list, { stateDir, log, nodeIPs: () => [] });
networks.setPodCIDRs([podCIDR]);
const remote = new RemotePodNetworks(networks, stateDir);
const saved = await remote.setUp(pod);
await remote.listen(saved.netns, port, (conn) => conn.close());
console.log(JSON.stringify(saved));
await new Promise(() => {});
`;

/** A process as /proc shows it: pid and start time (clock ticks since boot), so never a reused pid. */
interface ProcessId {
  pid: number;
  start: string;
}

function startOf(pid: number): string | undefined {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return fields[0] === "Z" ? undefined : fields[19];
  } catch {
    return undefined;
  }
}

/** The processes whose command line names `text` (the relays of one socket). */
function processesNaming(text: string): ProcessId[] {
  const found: ProcessId[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    const pid = Number(entry.name);
    if (!Number.isInteger(pid)) continue;
    try {
      const cmdline = Deno.readTextFileSync(`/proc/${pid}/cmdline`);
      const start = startOf(pid);
      if (cmdline.includes(text) && start) found.push({ pid, start });
    } catch {
      // gone
    }
  }
  return found;
}

function alive(p: ProcessId): boolean {
  return startOf(p.pid) === p.start;
}

/** Whether anything listens on TCP `port` inside `netns`. */
async function listening(netns: string, port: number): Promise<boolean> {
  const out = await new Deno.Command("nsenter", {
    args: [`--net=${netns}`, "--", "cat", "/proc/net/tcp", "/proc/net/tcp6"],
    stdout: "piped",
  }).output();
  const hex = `:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  return new TextDecoder().decode(out.stdout).split("\n")
    .some((l) => l.split(/\s+/)[2]?.endsWith(hex) && / 0A /.test(l));
}

Deno.test({
  name:
    "relays of a vkubelet killed with SIGKILL end with it, and the restarted one's relay serves the port",
  ignore: skip !== undefined,
  sanitizeResources: false,
  async fn() {
    const lab = await networkLab();
    const stateDir = await Deno.makeTempDir({ prefix: "vk-relays-state-" });
    const base = remotePod("job", "team", [PORT]);
    const pod: Pod = { ...base, metadata: { ...base.metadata, uid: crypto.randomUUID() } };
    const network = { ...lab.network, cniBinDir: [lab.network.cniBinDir] };
    const socket = join(stateDir, "remote", `${pod.metadata!.uid}-${PORT}.sock`);
    let old: ProcessId[] = [];
    const later = new RemotePodNetworks(
      new PodNetworks(network, (await loadNetworkConfig(network.cniConfDir))!, {
        stateDir,
        log,
        nodeIPs: () => [],
      }),
      stateDir,
    );
    let listener: { close(): Promise<void> } | undefined;
    try {
      const first = new Deno.Command(Deno.execPath(), {
        args: ["eval", FIRST_VKUBELET],
        env: {
          FIRST_VKUBELET: JSON.stringify({
            network,
            podCIDR: lab.podCIDR,
            stateDir,
            pod,
            port: PORT,
          }),
        },
        stdout: "piped",
        stderr: "inherit",
      }).spawn();
      const reader = first.stdout.pipeThrough(new TextDecoderStream()).getReader();
      let said = "";
      while (!said.includes("\n")) {
        const { value, done } = await reader.read();
        if (done) break;
        said += value;
      }
      reader.releaseLock();
      const saved = JSON.parse(said) as { ips: string[]; netns: string };
      old = processesNaming(`UNIX-CONNECT:${socket}`);
      assert.ok(old.length > 0, "the first vkubelet's relay was not found");
      await new Promise((r) => setTimeout(r, 500));
      assert.ok(old.every(alive), "the relay died while its vkubelet ran");

      first.kill("SIGKILL");
      await first.status;
      await first.stdout.cancel().catch(() => {});
      for (let i = 0; i < 40 && old.some(alive); i++) await new Promise((r) => setTimeout(r, 50));
      const left = old.filter(alive).map((p) => p.pid);
      assert.deepEqual(left, [], `relays of the killed vkubelet still run: pids ${left}`);

      // The restarted vkubelet: its relay binds the port and answers at the pod IP.
      await later.restore(pod, saved);
      listener = await later.listen(saved.netns, PORT, (conn) => {
        const writer = conn.writable.getWriter();
        const body = "hello from the new relay";
        void writer.write(new TextEncoder().encode(
          `HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
        )).then(() => writer.close()).catch(() => {}).finally(() => conn.close());
      });
      const got = await lab.inHost("curl", "-sS", "-m", "5", `http://${saved.ips[0]}:${PORT}/`);
      assert.equal(got, "hello from the new relay");
      await listener.close();
      listener = undefined;
      assert.ok(!await listening(saved.netns, PORT), "the port is still held after close");
    } finally {
      await listener?.close();
      for (const p of old.filter(alive)) Deno.kill(p.pid, "SIGKILL");
      await later.tearDown(pod).catch(() => {});
      await lab.close();
      await Deno.remove(stateDir, { recursive: true }).catch(() => {});
    }
  },
});
