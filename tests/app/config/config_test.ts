import assert from "node:assert/strict";
import {
  HELP_TEXT,
  loadConfig,
  type LoadConfigResult,
  VERSION,
} from "../../../app/config/config.ts";
import { OPTIONS } from "../../../app/config/options.ts";
import { builtinProviderNames } from "../../../app/provider_loader.ts";
import { formatDuration, parseDuration } from "../../../base/duration.ts";

/** The built-in providers as the messages list them; mock and process are always among them. */
const BUILTINS = builtinProviderNames().join(", ");

/** A readFile over an in-memory set of files. */
function files(contents: Record<string, string>) {
  return (path: string) =>
    path in contents
      ? Promise.resolve(contents[path])
      : Promise.reject(new Deno.errors.NotFound(`No such file or directory: ${path}`));
}

async function load(
  args: string[],
  env: Record<string, string> = {},
  contents: Record<string, string> = {},
): Promise<LoadConfigResult> {
  return await loadConfig({ args, env, readFile: files(contents) });
}

async function valid(args: string[], env: Record<string, string> = {}, contents = {}) {
  const result = await load(args, env, contents);
  assert.ok(result.ok, `expected a valid config, got ${JSON.stringify(result)}`);
  return result.config;
}

async function errors(args: string[], env: Record<string, string> = {}, contents = {}) {
  const result = await load(args, env, contents);
  assert.ok(!result.ok, "expected config errors");
  return result.errors;
}

Deno.test("defaults match virtual-kubelet and the kubelet", async () => {
  const config = await valid(["--provider", "mock"]);
  assert.equal(config.nodeName, "vkubelet");
  assert.equal(config.os, "linux");
  assert.equal(config.port, 10250);
  assert.equal(config.listenAddress, "0.0.0.0");
  assert.equal(config.podSyncWorkers, 10);
  assert.equal(config.fullResyncPeriod, 60_000);
  assert.equal(config.startupTimeout, 0);
  assert.equal(config.nodeLeaseDurationSeconds, 40);
  assert.equal(config.nodeLeaseRenewInterval, 10_000);
  assert.equal(config.nodeStatusUpdateFrequency, 10_000);
  assert.equal(config.nodeStatusReportFrequency, 60_000);
  assert.equal(config.taintKey, "virtual-kubelet.io/provider");
  assert.equal(config.taintValue, "mock");
  assert.equal(config.taintEffect, "NoSchedule");
  assert.equal(config.disableTaint, false);
  assert.equal(config.anonymousAuth, false);
  assert.equal(config.tlsSelfSigned, false);
  assert.equal(config.authorizationMode, "Webhook");
  assert.equal(config.recreateNode, true);
  assert.equal(config.logLevel, "info");
  assert.equal(config.logFormat, "text");
  assert.equal(config.eventQps, 50, "the kubelet's --event-qps");
  assert.equal(config.eventBurst, 100, "the kubelet's --event-burst");
});

Deno.test("event limits: 0 turns the limit off, a burst below the QPS is refused", async () => {
  const off = await valid(["--provider", "mock", "--event-qps", "0"]);
  assert.equal(off.eventQps, 0);
  const fromEnv = await valid(["--provider", "mock"], {
    VKUBELET_EVENT_QPS: "200",
    VKUBELET_EVENT_BURST: "400",
  }, {});
  assert.equal(fromEnv.eventQps, 200);
  const problems = await errors(["--provider", "mock", "--event-qps", "200"]);
  assert.deepEqual(problems.length, 1);
  assert.match(problems[0], /^--event-burst: 100 is below the event QPS \(200\); use at least/);
  const negative = await errors(["--provider", "mock", "--event-qps", "-1"]);
  assert.match(negative[0], /^--event-qps: /);
});

Deno.test("a flag beats the environment, which beats the config file", async () => {
  const file = { "vk.yaml": "nodeName: from-file\nport: 1001\npodSyncWorkers: 3\n" };
  const config = await valid(
    ["--provider=mock", "--config", "vk.yaml", "--port", "1003"],
    { KUBELET_PORT: "1002", DEFAULT_NODE_NAME: "from-env" },
    file,
  );
  assert.equal(config.port, 1003);
  assert.equal(config.nodeName, "from-env");
  assert.equal(config.podSyncWorkers, 3);
});

Deno.test("virtual-kubelet's environment variables are honoured", async () => {
  const config = await valid(["--provider", "mock"], {
    KUBELET_PORT: "10255",
    VKUBELET_POD_IP: "127.0.0.9",
    APISERVER_CERT_LOCATION: "/c.pem",
    APISERVER_KEY_LOCATION: "/k.pem",
    APISERVER_CA_CERT_LOCATION: "/ca.pem",
    VKUBELET_TAINT_KEY: "example.com/virtual",
    VKUBELET_TAINT_VALUE: "yes",
    VKUBELET_TAINT_EFFECT: "noexecute",
  }, { "/c.pem": "", "/k.pem": "", "/ca.pem": "" });
  assert.equal(config.port, 10255);
  assert.equal(config.nodeIp, "127.0.0.9");
  assert.equal(config.tlsCertFile, "/c.pem");
  assert.equal(config.tlsPrivateKeyFile, "/k.pem");
  assert.equal(config.clientCaFile, "/ca.pem");
  assert.deepEqual([config.taintKey, config.taintValue, config.taintEffect], [
    "example.com/virtual",
    "yes",
    "NoExecute",
  ]);
});

Deno.test("an empty environment variable counts as unset", async () => {
  const config = await valid(["--provider", "mock"], { KUBELET_PORT: "" });
  assert.equal(config.port, 10250);
});

Deno.test("durations are Go-style and come out in milliseconds", async () => {
  assert.equal(parseDuration("1m30s"), 90_000);
  assert.equal(parseDuration("1.5h"), 5_400_000);
  assert.equal(parseDuration("250ms"), 250);
  assert.equal(parseDuration("0"), 0);
  assert.equal(parseDuration("10"), undefined);
  assert.equal(parseDuration("10x"), undefined);
  assert.equal(formatDuration(90_000), "1m30s");
  const config = await valid(["--provider", "mock", "--full-resync-period=1m30s"]);
  assert.equal(config.fullResyncPeriod, 90_000);
});

Deno.test("booleans take --flag, --flag=true and --flag=false", async () => {
  assert.equal((await valid(["--provider", "mock", "--disable-taint"])).disableTaint, true);
  assert.equal((await valid(["--provider", "mock", "--recreate-node=false"])).recreateNode, false);
  const fromEnv = await valid(["--provider", "mock"], { VKUBELET_ANONYMOUS_AUTH: "true" });
  assert.equal(fromEnv.anonymousAuth, true);
});

Deno.test("node labels merge repeated flags, commas and a YAML map", async () => {
  const config = await valid([
    "--provider",
    "mock",
    "--node-labels=a=1,b=2",
    "--node-labels",
    "c=3",
  ]);
  assert.deepEqual(config.nodeLabels, { a: "1", b: "2", c: "3" });
  const fromFile = await valid(["--provider", "mock", "--config=c.yaml"], {}, {
    "c.yaml": "nodeLabels:\n  tier: 1\n  example.com/zone: a\n",
  });
  assert.deepEqual(fromFile.nodeLabels, { tier: "1", "example.com/zone": "a" });
});

Deno.test("every problem is reported at once, each naming its field as written", async () => {
  const problems = await errors(
    ["--provider", "mokc", "--pod-sync-workers=abc", "--full-resync-period", "10x", "--os=plan9"],
    { KUBELET_PORT: "70000" },
  );
  assert.equal(problems.length, 5, problems.join("\n"));
  const find = (prefix: string) => problems.find((p) => p.startsWith(prefix));
  assert.match(find("--provider")!, /unknown provider "mokc".*built-in provider \(([a-z, ]+)\)/);
  assert.ok(find("--provider")!.includes(`(${BUILTINS})`), find("--provider")!);
  assert.match(find("--pod-sync-workers")!, /whole number, got "abc"/);
  assert.match(find("--full-resync-period")!, /duration such as 10s/);
  assert.match(find("--os")!, /one of linux, windows/);
  assert.match(find("KUBELET_PORT (environment)")!, /at most 65535/);
});

Deno.test("a missing provider says how to name one", async () => {
  const [problem] = await errors([]);
  assert.ok(
    problem.startsWith(`--provider: is required: name a built-in provider (${BUILTINS})`),
    problem,
  );
});

Deno.test("unknown flags are errors with a did-you-mean hint", async () => {
  const problems = await errors(["--provider", "mock", "--node-name", "vk-1", "--verbose"]);
  assert.deepEqual(problems, [
    "unknown flag --node-name; did you mean --nodename? (see --help)",
    "unknown flag --verbose (see --help)",
  ]);
});

Deno.test("a flag without its value is reported and the next flag still counts", async () => {
  const problems = await errors(["--nodename", "--disable-taint=maybe", "--provider", "mock"]);
  assert.deepEqual(problems, [
    "--nodename needs a value: write --nodename=NAME",
    '--disable-taint: expected true or false, got "maybe"',
  ]);
});

Deno.test("a lease renew interval not shorter than the lease is a cross-field error", async () => {
  const problems = await errors(["--provider", "mock", "--node-lease-renew-interval=40s"]);
  assert.equal(problems.length, 1);
  assert.match(
    problems[0],
    /^--node-lease-renew-interval: 40s must be .* shorter than the lease duration \(40s\)/,
  );
});

Deno.test("cross-field rules are reported together with field errors", async () => {
  const problems = await errors([
    "--provider=mock",
    "--port=x",
    "--node-status-update-frequency=1m",
    "--node-status-report-frequency=10s",
  ]);
  assert.equal(problems.length, 2, problems.join("\n"));
  assert.match(problems[1], /^--node-status-report-frequency: 10s is shorter than/);
});

Deno.test("a certificate needs its key, and files exclude self-signed", async () => {
  const onlyCert = await errors(["--provider=mock", "--tls-cert-file=c.pem"], {}, { "c.pem": "" });
  assert.deepEqual(onlyCert.map((p) => p.split(":")[0]), ["--tls-private-key-file"]);
  const both = await errors(
    [
      "--provider=mock",
      "--tls-cert-file=c.pem",
      "--tls-private-key-file=k.pem",
      "--tls-self-signed",
    ],
    {},
    { "c.pem": "", "k.pem": "" },
  );
  assert.match(both[0], /^--tls-self-signed: conflicts with a certificate file/);
});

Deno.test("anonymous auth with AlwaysAllow is refused off loopback", async () => {
  const flags = ["--provider=mock", "--anonymous-auth", "--authorization-mode=AlwaysAllow"];
  const [problem] = await errors(flags);
  assert.match(problem, /^--anonymous-auth: .*listen on 127\.0\.0\.1/);
  await valid([...flags, "--listen-address=127.0.0.1"]);
});

Deno.test("files named by options must be readable", async () => {
  const problems = await errors(["--provider=mock", "--kubeconfig=/missing/kubeconfig"]);
  assert.match(problems[0], /^--kubeconfig: cannot read "\/missing\/kubeconfig"/);
  // $KUBECONFIG is a list: one readable entry is enough.
  await valid(["--provider=mock"], { KUBECONFIG: "/missing:/kc" }, { "/kc": "" });
});

Deno.test("config file problems name the file and the key", async () => {
  const problems = await errors(["--config=vk.yaml"], {}, {
    "vk.yaml": "provider: mock\nnodname: vk-1\npodSyncWorkers: zero\n",
  });
  assert.deepEqual(problems, [
    'config file vk.yaml: unknown key "nodname"; did you mean nodeName?',
    'podSyncWorkers in vk.yaml: expected a whole number, got "zero"',
  ]);
  const [unreadable] = await errors(["--config=nope.yaml", "--provider=mock"]);
  assert.match(unreadable, /^config file nope\.yaml cannot be read/);
  const [broken] = await errors(["--config=b.yaml", "--provider=mock"], {}, { "b.yaml": "a: [" });
  assert.match(broken, /^config file b\.yaml is not valid YAML or JSON/);
});

Deno.test("a JSON config file works too", async () => {
  const config = await valid(["--config=vk.json"], {}, {
    "vk.json": '{"provider": "mock", "nodeName": "vk-json", "disableTaint": true}',
  });
  assert.equal(config.nodeName, "vk-json");
  assert.equal(config.disableTaint, true);
});

Deno.test("an external provider's default taint value is its module name", async () => {
  const config = await valid(["--provider=./providers/acme/mod.ts"]);
  assert.equal(config.taintValue, "acme");
});

Deno.test("the help text documents every option with its env name and file key", () => {
  for (const option of OPTIONS) {
    assert.ok(HELP_TEXT.includes(`--${option.flag}`), option.flag);
    for (const env of option.env) assert.ok(HELP_TEXT.includes(env), env);
    if (option.key !== "config") assert.ok(HELP_TEXT.includes(`file ${option.key}`), option.key);
  }
  assert.match(VERSION, /^\d+\.\d+\.\d+/);
});

Deno.test("DaemonSet pods are skipped unless --daemonset-pods=run", async () => {
  assert.equal((await valid(["--provider", "mock"])).daemonSetPods, "skip");
  const run = await valid(["--provider", "mock"], { VKUBELET_DAEMONSET_PODS: "run" });
  assert.equal(run.daemonSetPods, "run");
  const [problem] = await errors(["--provider", "mock", "--daemonset-pods=always"]);
  assert.match(problem, /^--daemonset-pods: .*always/);
});

Deno.test("a plain number for a duration is refused in the file as on the command line", async () => {
  const fileErrors = await errors(["--provider", "mock", "--config", "/vk.yaml"], {}, {
    "/vk.yaml": "fullResyncPeriod: 10\nstreamIdleTimeout: 0\n",
  });
  assert.deepEqual(fileErrors, [
    "fullResyncPeriod in /vk.yaml: 10 has no unit: write 10s for seconds or 10ms for milliseconds",
  ]);
  const flagErrors = await errors(["--provider", "mock", "--full-resync-period=10"]);
  assert.deepEqual(flagErrors, [
    "--full-resync-period: 10 has no unit: write 10s for seconds or 10ms for milliseconds",
  ]);
  const config = await valid(["--provider", "mock", "--config", "/vk.yaml"], {}, {
    "/vk.yaml": "fullResyncPeriod: 10s\nstreamIdleTimeout: 0\n",
  });
  assert.equal(config.fullResyncPeriod, 10_000);
  assert.equal(config.streamIdleTimeout, 0);
});

Deno.test("vkubelet's own environment name beats virtual-kubelet's, with a warning", async () => {
  const result = await load(["--provider", "mock"], {
    VKUBELET_NODE_IP: "127.0.0.2",
    VKUBELET_POD_IP: "127.0.0.3",
    VKUBELET_NODE_NAME: "specific",
    DEFAULT_NODE_NAME: "default",
  });
  assert.ok(result.ok);
  assert.equal(result.config.nodeIp, "127.0.0.2");
  assert.equal(result.config.nodeName, "specific");
  assert.deepEqual(result.warnings, [
    "DEFAULT_NODE_NAME=default is ignored: VKUBELET_NODE_NAME=specific is also set and is the more specific",
    "VKUBELET_POD_IP=127.0.0.3 is ignored: VKUBELET_NODE_IP=127.0.0.2 is also set and is the more specific",
  ]);
  const same = await load(["--provider", "mock"], {
    VKUBELET_NODE_IP: "127.0.0.2",
    VKUBELET_POD_IP: "127.0.0.2",
  });
  assert.ok(same.ok);
  assert.deepEqual(same.warnings, []);
});

Deno.test("a remote provider module is refused with what to do instead", async () => {
  for (const url of ["https://example.com/provider.ts", "http://127.0.0.1:8000/p.ts"]) {
    const list = await errors(["--provider", url]);
    assert.equal(list.length, 1);
    assert.match(list[0], /^--provider: ".*": remote provider modules are not imported; download/);
  }
  await valid(["--provider", "file:///opt/provider/mod.ts"]);
  await valid(["--provider", "./provider.ts"]);
});

Deno.test("tracing is off by default; a bad exporter or sample rate says what to write", async () => {
  const config = await valid(["--provider", "mock"]);
  assert.equal(config.traceExporter, undefined);
  assert.equal(config.traceSampleRate, 100);
  const problems = await errors([
    "--provider",
    "mock",
    "--trace-exporter",
    "stdout",
    "--trace-sample-rate",
    "0.5",
  ]);
  assert.equal(problems.length, 2, problems.join("\n"));
  assert.match(
    problems[0],
    /^--trace-exporter: "stdout" is not an exporter .*--trace-exporter otlp/,
  );
  assert.match(problems[1], /^--trace-sample-rate: expected always, never or a whole percentage/);
});

Deno.test("a misspelled VKUBELET_ variable is a warning with a did-you-mean", async () => {
  const result = await load(["--provider=mock"], {
    VKUBELET_NODENAME: "vk-1",
    VKUBELET_POD_SYNC_WORKRES: "4",
    VKUBELET_CALLER_DIR: "/somewhere",
    VKUBELET_SOMETHING_ELSE_ENTIRELY: "x",
  });
  assert.ok(result.ok, JSON.stringify(result));
  assert.deepEqual(result.warnings, [
    "VKUBELET_NODENAME is not an option and is ignored; did you mean VKUBELET_NODE_NAME? (see --help)",
    "VKUBELET_POD_SYNC_WORKRES is not an option and is ignored; did you mean VKUBELET_POD_SYNC_WORKERS? (see --help)",
    "VKUBELET_SOMETHING_ELSE_ENTIRELY is not an option and is ignored (see --help)",
  ]);
});
