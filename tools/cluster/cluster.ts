/**
 * The local control plane: etcd, kube-apiserver, kube-controller-manager and kube-scheduler on
 * loopback, configured like a real cluster's (Node,RBAC authorization, a client CA, service
 * account keys, a kubelet client certificate, the aggregation layer's front proxy, bootstrap
 * tokens with the bindings of TLS bootstrap). Each
 * component runs detached in its own process group; `state.json` records what was started so
 * that `down` stops exactly that.
 * @module
 */
import { cacheDir, ensureBinary } from "./build.ts";
import { freePort } from "./ports.ts";
import { bootstrapBindings } from "./bootstrap_rbac.ts";

/** Where one cluster's PKI, data, logs and kubeconfigs live. */
export interface ClusterPaths {
  name: string;
  dir: string;
  pki: string;
  state: string;
  /** The admin kubeconfig (`system:masters`, client-certificate authentication). */
  adminKubeconfig: string;
}

/**
 * Paths of the cluster called `name`. Several clusters can run side by side (the kubernetes
 * provider's tests need a second one); "default" is the one tests and the demo use.
 */
export function clusterPaths(name = "default"): ClusterPaths {
  if (!/^[a-z0-9][a-z0-9-]{0,30}$/.test(name)) {
    throw new RangeError(`cluster name "${name}" must be lower-case letters, digits and dashes`);
  }
  const dir = name === "default" ? `${cacheDir}/cluster` : `${cacheDir}/cluster-${name}`;
  return {
    name,
    dir,
    pki: `${dir}/pki`,
    state: `${dir}/state.json`,
    adminKubeconfig: `${dir}/admin.kubeconfig`,
  };
}

/** The components, in start order. */
export const COMPONENTS = [
  "etcd",
  "kube-apiserver",
  "kube-controller-manager",
  "kube-scheduler",
] as const;
/** One of {@link COMPONENTS}. */
export type Component = typeof COMPONENTS[number];

interface ComponentState {
  pid: number;
  args: string[];
  log: string;
}

/** What `up` recorded. */
export interface ClusterState {
  paths: ClusterPaths;
  binary: string;
  server: string;
  ports: Record<Component, number>;
  etcdPeerPort: number;
  components: Record<Component, ComponentState>;
  options: UpOptions;
  /** Processes started beside the control plane on request (metrics-server); `down` stops them. */
  addons?: Record<string, AddonState>;
}

/** A process started beside the control plane from a binary of its own. */
export interface AddonState extends ComponentState {
  binary: string;
}

/** Options for {@link up}. */
export interface UpOptions {
  /** Make the apiserver verify kubelet serving certificates against the cluster CA. */
  verifyKubeletServing?: boolean;
  /**
   * A static token file (`--token-auth-file`, CSV `token,user,uid,"group1,group2"`) the apiserver
   * accepts bearer tokens from, for tests of credential plugins; read once at start-up.
   */
  tokenAuthFile?: string;
  /**
   * The Service IP range (`--service-cluster-ip-range` of the apiserver and the
   * controller-manager); default {@link DEFAULT_SERVICE_RANGE}. A ClusterIP in 127.0.0.0/8 is
   * reachable from the host only: inside a pod's network namespace 127/8 is that namespace's own
   * `lo`, so a cluster whose pods call Services needs a range outside it.
   */
  serviceRange?: string;
}

/** The Service range of a cluster started without {@link UpOptions.serviceRange}. */
export const DEFAULT_SERVICE_RANGE = "127.0.100.0/24";

/** Reads the recorded state, or undefined when the cluster was never started or was stopped. */
export function readState(paths = clusterPaths()): ClusterState | undefined {
  try {
    return JSON.parse(Deno.readTextFileSync(paths.state));
  } catch {
    return undefined;
  }
}

/** True while `pid` runs `binary` (not a zombie, not a reused pid). */
export function alive(pid: number, binary: string): boolean {
  try {
    const cmdline = Deno.readTextFileSync(`/proc/${pid}/cmdline`);
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // A zombie has exited; a reused pid runs something else.
    // Before `sh -c exec` has run, the command line is the shell's, which names the binary too.
    return cmdline.includes(binary) && !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return false;
  }
}

/**
 * Whether a process this run has just started has exited (gone, or a zombie). Unlike
 * {@link alive} it does not look at the command line: between fork and exec that is still the
 * parent's, which made a starting component look dead on a busy machine.
 */
export function exited(pid: number): boolean {
  try {
    return /^\d+ \(.*\) [ZX]/.test(Deno.readTextFileSync(`/proc/${pid}/stat`));
  } catch {
    return true;
  }
}

/** Which components are running, from the recorded state. */
export function running(state: ClusterState): Record<Component, boolean> {
  return Object.fromEntries(
    COMPONENTS.map((c) => [c, alive(state.components[c]?.pid ?? -1, state.binary)]),
  ) as Record<Component, boolean>;
}

function pem(paths: ClusterPaths, name: string): string {
  return Deno.readTextFileSync(`${paths.pki}/${name}`);
}

/** An HTTP client that trusts the cluster CA and presents the admin certificate. */
export function adminHttpClient(paths: ClusterPaths): Deno.HttpClient {
  return Deno.createHttpClient({
    caCerts: [pem(paths, "ca.crt")],
    cert: pem(paths, "admin.crt"),
    key: pem(paths, "admin.key"),
  });
}

/** True when `url` answers 200 with the admin identity within two seconds. */
export async function healthy(paths: ClusterPaths, url: string): Promise<boolean> {
  const client = adminHttpClient(paths);
  try {
    const res = await fetch(url, { client, signal: AbortSignal.timeout(2000) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  } finally {
    client.close();
  }
}

/** `path` with links resolved (one file reached through a linked cache is the same file). */
function realPath(path: string | undefined): string {
  if (!path) return "";
  try {
    return Deno.realPathSync(path);
  } catch {
    return path;
  }
}

/** True once `url` is {@link healthy}, asking every second for at most `withinMs`. */
async function healthyWithin(paths: ClusterPaths, url: string, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (!(await healthy(paths, url))) {
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  return true;
}

function kubeconfig(paths: ClusterPaths, server: string, user: string): string {
  const b64 = (name: string) => btoa(pem(paths, name));
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: local",
    "  cluster:",
    `    server: ${server}`,
    `    certificate-authority-data: ${b64("ca.crt")}`,
    "users:",
    `- name: ${user}`,
    "  user:",
    `    client-certificate-data: ${b64(`${user}.crt`)}`,
    `    client-key-data: ${b64(`${user}.key`)}`,
    "contexts:",
    "- name: local",
    "  context:",
    "    cluster: local",
    `    user: ${user}`,
    "current-context: local",
    "",
  ].join("\n");
}

/** What {@link runCommand} gives back. */
export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `binary` with `args` (and `stdin` when given); never throws on a non-zero exit. */
export async function runCommand(
  binary: string,
  args: string[],
  options: { stdin?: string; signal?: AbortSignal } = {},
): Promise<CommandResult> {
  const child = new Deno.Command(binary, {
    args,
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    signal: options.signal,
  }).spawn();
  if (options.stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(options.stdin));
    await writer.close();
  }
  const out = await child.output();
  const decoder = new TextDecoder();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

/** {@link runCommand}, returning stdout; a non-zero exit throws with the command and stderr. */
export async function runChecked(binary: string, args: string[], stdin?: string): Promise<string> {
  const out = await runCommand(binary, args, { stdin });
  if (out.code !== 0) {
    throw new Error(`${args.slice(0, 3).join(" ")} failed: ${out.stderr.trim()}`);
  }
  return out.stdout;
}

/** Starts one component detached, its output appended to its log; returns its pid. */
function spawnComponent(binary: string, name: Component, args: string[], log: string): number {
  const child = new Deno.Command("sh", {
    args: ["-c", 'exec "$0" "$@" >>"$VK_LOG" 2>&1', binary, name, ...args],
    env: { VK_LOG: log },
    detached: true,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  child.unref();
  return child.pid;
}

function componentArgs(
  paths: ClusterPaths,
  ports: Record<Component, number>,
  peer: number,
  options: UpOptions,
) {
  const clusterDir = paths.dir;
  const serviceRange = options.serviceRange ?? DEFAULT_SERVICE_RANGE;
  const p = (name: string) => `${paths.pki}/${name}`;
  const server = `https://127.0.0.1:${ports["kube-apiserver"]}`;
  const own = (name: string) => [
    `--kubeconfig=${clusterDir}/${name}.kubeconfig`,
    `--authentication-kubeconfig=${clusterDir}/${name}.kubeconfig`,
    `--authorization-kubeconfig=${clusterDir}/${name}.kubeconfig`,
    "--bind-address=127.0.0.1",
    `--secure-port=${ports[name as Component]}`,
    `--tls-cert-file=${p(`${name}-serving.crt`)}`,
    `--tls-private-key-file=${p(`${name}-serving.key`)}`,
    "--leader-elect=false",
    "--profiling=false",
  ];
  const args: Record<Component, string[]> = {
    etcd: [
      "--name=vk",
      `--data-dir=${clusterDir}/etcd`,
      `--listen-client-urls=http://127.0.0.1:${ports.etcd}`,
      `--advertise-client-urls=http://127.0.0.1:${ports.etcd}`,
      `--listen-peer-urls=http://127.0.0.1:${peer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`,
      `--initial-cluster=vk=http://127.0.0.1:${peer}`,
      "--unsafe-no-fsync",
      "--log-level=warn",
    ],
    "kube-apiserver": [
      `--etcd-servers=http://127.0.0.1:${ports.etcd}`,
      "--bind-address=127.0.0.1",
      "--advertise-address=127.0.0.1",
      // Endpoints may not hold loopback addresses, so the `kubernetes` Service gets none.
      "--endpoint-reconciler-type=none",
      `--secure-port=${ports["kube-apiserver"]}`,
      `--tls-cert-file=${p("apiserver.crt")}`,
      `--tls-private-key-file=${p("apiserver.key")}`,
      `--client-ca-file=${p("ca.crt")}`,
      "--authorization-mode=Node,RBAC",
      "--enable-admission-plugins=NodeRestriction",
      // Bootstrap tokens (Secrets bootstrap-token-<id> in kube-system) authenticate a kubelet
      // that has no certificate yet, as group system:bootstrappers (TLS bootstrap).
      "--enable-bootstrap-token-auth=true",
      "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
      `--service-account-key-file=${p("sa.pub")}`,
      `--service-account-signing-key-file=${p("sa.key")}`,
      `--service-cluster-ip-range=${serviceRange}`,
      "--allow-privileged=true",
      `--kubelet-client-certificate=${p("apiserver-kubelet-client.crt")}`,
      `--kubelet-client-key=${p("apiserver-kubelet-client.key")}`,
      // Only InternalIP: a Hostname address could resolve off loopback.
      "--kubelet-preferred-address-types=InternalIP",
      ...(options.verifyKubeletServing ? [`--kubelet-certificate-authority=${p("ca.crt")}`] : []),
      ...(options.tokenAuthFile ? [`--token-auth-file=${options.tokenAuthFile}`] : []),
      `--requestheader-client-ca-file=${p("front-proxy-ca.crt")}`,
      "--requestheader-allowed-names=front-proxy-client",
      "--requestheader-username-headers=X-Remote-User",
      "--requestheader-group-headers=X-Remote-Group",
      "--requestheader-extra-headers-prefix=X-Remote-Extra-",
      `--proxy-client-cert-file=${p("front-proxy-client.crt")}`,
      `--proxy-client-key-file=${p("front-proxy-client.key")}`,
      `--cert-dir=${clusterDir}/apiserver-certs`,
      "--profiling=false",
    ],
    "kube-controller-manager": [
      ...own("kube-controller-manager"),
      // The default set (csrapproving, csrsigning among them) plus the token cleaner, which
      // deletes expired bootstrap tokens, as kubeadm turns on.
      "--controllers=*,tokencleaner",
      `--root-ca-file=${p("ca.crt")}`,
      `--service-account-private-key-file=${p("sa.key")}`,
      "--use-service-account-credentials=true",
      `--cluster-signing-cert-file=${p("ca.crt")}`,
      `--cluster-signing-key-file=${p("ca.key")}`,
      `--service-cluster-ip-range=${serviceRange}`,
      "--allocate-node-cidrs=false",
      // Shorter than the default so that tests of a node going NotReady finish sooner; still
      // longer than vkubelet's lease renewal interval.
      "--node-monitor-grace-period=20s",
    ],
    "kube-scheduler": own("kube-scheduler"),
  };
  return { server, args };
}

async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  isDead: () => boolean,
  log: string,
  timeoutMs = 120_000,
) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    if (isDead()) {
      const tail = (await Deno.readTextFile(log).catch(() => "")).split("\n").slice(-15).join("\n");
      throw new Error(`${what} exited during start-up; the end of ${log}:\n${tail}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what} was not ready after ${timeoutMs / 1000} s; see ${log}`);
}

async function preparePki(binary: string, pkiDir: string): Promise<void> {
  await runChecked(binary, ["pki", pkiDir]);
  for (const name of ["kube-controller-manager", "kube-scheduler"]) {
    try {
      await Deno.stat(`${pkiDir}/${name}-serving.crt`);
    } catch {
      await runChecked(binary, [
        "cert",
        `--ca=${pkiDir}/ca`,
        `--out=${pkiDir}/${name}-serving`,
        `--cn=${name}`,
        "--san=127.0.0.1,localhost",
      ]);
    }
  }
}

/** Options for {@link up}'s progress reporting. */
export interface ProgressOptions {
  progress?: (line: string) => void;
}

/**
 * Starts the control plane unless it is already up, and returns its state. A partly running
 * cluster (a component died) is stopped and started afresh.
 */
export async function up(
  options: UpOptions & ProgressOptions & { paths?: ClusterPaths } = {},
): Promise<ClusterState> {
  const paths = options.paths ?? clusterPaths();
  const clusterDir = paths.dir;
  const previous = readState(paths);
  if (previous && Object.values(running(previous)).every(Boolean)) {
    // Every process runs: a slow /readyz on a loaded machine is not a dead cluster, and
    // restarting it would pull it from under whoever else uses it. Give it 30 s.
    if (await healthyWithin(paths, `${previous.server}/readyz`, 30_000)) {
      if (realPath(previous.options.tokenAuthFile) !== realPath(options.tokenAuthFile)) {
        throw new Error(
          `cluster ${paths.name} is up with token file ${
            previous.options.tokenAuthFile ?? "(none)"
          }, not ${
            options.tokenAuthFile ?? "(none)"
          }; run: deno task cluster --name=${paths.name} down`,
        );
      }
      const range = (o: UpOptions) => o.serviceRange ?? DEFAULT_SERVICE_RANGE;
      if (range(previous.options) !== range(options)) {
        throw new Error(
          `cluster ${paths.name} is up with Service range ${range(previous.options)}, not ${
            range(options)
          }; run: deno task cluster --name=${paths.name} down`,
        );
      }
      return previous;
    }
  }
  if (previous) await down(paths);
  const progress = options.progress ?? (() => {});
  const binary = await ensureBinary({ progress });
  await Deno.mkdir(`${clusterDir}/logs`, { recursive: true });
  await preparePki(binary, paths.pki);
  for (let attempt = 1;; attempt++) {
    try {
      return await start(paths, binary, options, progress);
    } catch (err) {
      // A port free when chosen can still be bound by someone else before the component binds it.
      if (attempt === 3 || !/address already in use/.test(String(err))) throw err;
      progress(`a port was taken while starting (${attempt} of 3); again with new ports`);
      await down(paths);
    }
  }
}

async function start(
  paths: ClusterPaths,
  binary: string,
  options: UpOptions,
  progress: (line: string) => void,
): Promise<ClusterState> {
  const clusterDir = paths.dir;
  await Deno.remove(`${clusterDir}/etcd`, { recursive: true }).catch(() => {});
  const ports = {} as Record<Component, number>;
  for (const c of COMPONENTS) ports[c] = freePort();
  const etcdPeerPort = freePort();
  const { server, args } = componentArgs(paths, ports, etcdPeerPort, options);
  for (const name of ["admin", "kube-controller-manager", "kube-scheduler"]) {
    await Deno.writeTextFile(`${clusterDir}/${name}.kubeconfig`, kubeconfig(paths, server, name), {
      mode: 0o600,
    });
  }
  const { verifyKubeletServing, tokenAuthFile, serviceRange } = options;
  const state: ClusterState = {
    paths,
    binary,
    server,
    ports,
    etcdPeerPort,
    components: {} as ClusterState["components"],
    options: { verifyKubeletServing, tokenAuthFile, serviceRange },
  };
  for (const c of COMPONENTS) {
    const log = `${clusterDir}/logs/${c}.log`;
    await Deno.writeTextFile(log, "");
    state.components[c] = { pid: spawnComponent(binary, c, args[c], log), args: args[c], log };
    await Deno.writeTextFile(paths.state, JSON.stringify(state, null, 2));
    progress(`started ${c} (pid ${state.components[c].pid})`);
    await waitReady(state, c);
  }
  // TLS bootstrap: who may ask for node client certificates, and whose are approved.
  await runChecked(binary, [
    "kubectl",
    `--kubeconfig=${paths.adminKubeconfig}`,
    "apply",
    "-f",
    "-",
  ], bootstrapBindings());
  progress("bound system:bootstrappers and system:nodes for TLS bootstrap");
  return state;
}

function readyUrl(state: ClusterState, c: Component): string {
  const port = state.ports[c];
  if (c === "etcd") return `http://127.0.0.1:${port}/health`;
  if (c === "kube-apiserver") return `${state.server}/readyz`;
  return `https://127.0.0.1:${port}/healthz`;
}

async function waitReady(state: ClusterState, c: Component): Promise<void> {
  const { pid, log } = state.components[c];
  const url = readyUrl(state, c);
  const check = c === "etcd"
    ? async () => {
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
        return res.ok && (await res.json()).health === "true";
      } catch {
        return false;
      }
    }
    : () => healthy(state.paths, url);
  await waitFor(c, check, () => exited(pid), log);
}

/** Stops one component (and its process group), waiting until it has exited. */
export function stopComponent(state: ClusterState, c: Component): Promise<void> {
  return stopProcess(c, state.components[c].pid, state.binary);
}

/** Stops the process group of `pid` (running `binary`), waiting until it has exited. */
export async function stopProcess(what: string, pid: number, binary: string): Promise<void> {
  for (const [signal, waitMs] of [["SIGTERM", 15_000], ["SIGKILL", 5_000]] as const) {
    if (!alive(pid, binary)) return;
    try {
      Deno.kill(-pid, signal);
    } catch {
      // Already gone.
    }
    const deadline = Date.now() + waitMs;
    while (alive(pid, binary) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  if (alive(pid, binary)) throw new Error(`${what} (pid ${pid}) did not stop`);
}

/** Starts one component again with the arguments it had, and waits until it is ready. */
export async function startComponent(state: ClusterState, c: Component): Promise<void> {
  const entry = state.components[c];
  if (alive(entry.pid, state.binary)) return;
  entry.pid = spawnComponent(state.binary, c, entry.args, entry.log);
  await Deno.writeTextFile(state.paths.state, JSON.stringify(state, null, 2));
  await waitReady(state, c);
}

/** Stops every addon and every component `up` started, in reverse order, and forgets the state. */
export async function down(paths = clusterPaths()): Promise<boolean> {
  const state = readState(paths);
  if (!state) return false;
  for (const [name, addon] of Object.entries(state.addons ?? {})) {
    await stopProcess(name, addon.pid, addon.binary);
  }
  for (const c of [...COMPONENTS].reverse()) {
    if (state.components[c]) await stopComponent(state, c);
  }
  // What tests were issued (certificates, kubeconfigs, provider configs) ends with the cluster.
  await Deno.remove(`${paths.dir}/certs`, { recursive: true }).catch(() => {});
  await Deno.remove(paths.state);
  return true;
}
