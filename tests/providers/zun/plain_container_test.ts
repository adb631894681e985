/**
 * Units of the plain-container path, no stack: which pods run as plain containers and the body
 * they make, a container's exit code from Zun's status text, the argv sent to Zun's execute API
 * (split back by Python's shlex), log lines with their times, and the CPU time in a top answer.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { isInvalidInput } from "../../../provider/mod.ts";
import {
  CONTAINER_TAG,
  containerCreateBody,
  runsAsContainer,
} from "../../../providers/zun/request/container.ts";
import { podOfContainer, runOfContainer } from "../../../providers/zun/status.ts";
import { cpuSecondsOf, parseCpuTime } from "../../../providers/zun/stats.ts";
import { shellJoin } from "../../../providers/zun/streams/exec.ts";
import { parseLogLines } from "../../../providers/zun/streams/logs.ts";

const uid = "0b6f1c1e-8d0a-4d56-9b1e-3c2b7b0f9a11";

function pod(extra: Partial<NonNullable<Pod["spec"]>> = {}): Pod {
  return {
    metadata: { namespace: "ns", name: "web", uid },
    spec: {
      restartPolicy: "OnFailure",
      containers: [{
        name: "main",
        image: "busybox",
        command: ["sh", "-c"],
        args: ["echo $(GREETING)"],
        env: [{ name: "GREETING", value: "hi" }],
        resources: { limits: { cpu: "250m", memory: "64Mi" } },
      }],
      ...extra,
    },
  };
}

Deno.test("one container and no init containers run as a plain container, the rest as capsules", () => {
  assert.equal(runsAsContainer(pod()), true);
  const two = pod();
  two.spec!.containers.push({ name: "side", image: "busybox" });
  assert.equal(runsAsContainer(two), false);
  assert.equal(runsAsContainer(pod({ initContainers: [{ name: "i", image: "busybox" }] })), false);
});

Deno.test("a plain container carries the pod's tag, entrypoint and command, and Zun's policy no", () => {
  const body = containerCreateBody(pod(), {
    nodeName: "vk",
    exposePorts: false,
    version: "1.40",
    run: 2,
  });
  assert.equal(body.name, "ns.web.2");
  assert.deepEqual(body.entrypoint, ["sh", "-c"]);
  assert.deepEqual(body.command, ["echo hi"]);
  assert.equal(body.cpu, 0.25);
  assert.equal(body.memory, "64");
  assert.deepEqual(body.restart_policy, { Name: "no" });
  const labels = body.labels as Record<string, string>;
  assert.deepEqual(CONTAINER_TAG.read(labels), {
    node: "vk",
    namespace: "ns",
    name: "web",
    uid,
    run: 2,
  });
  const adopted = podOfContainer({ uuid: "u", name: "ns.web.2", status: "Running", labels });
  assert.equal(adopted?.spec?.restartPolicy, "OnFailure");
  assert.equal(adopted?.spec?.containers[0].name, "main");
  // a command without args: its last word is the Cmd, or Zun would append the image's Cmd
  const sleeping = pod();
  sleeping.spec!.containers[0] = { name: "main", image: "busybox", command: ["sleep", "600"] };
  const alone = containerCreateBody(sleeping, {
    nodeName: "vk",
    exposePorts: false,
    version: "1.40",
    run: 0,
  });
  assert.deepEqual([alone.entrypoint, alone.command], [["sleep"], ["600"]]);
  // before 1.40 there is no entrypoint: command and args go together
  const old = containerCreateBody(pod(), {
    nodeName: "vk",
    exposePorts: false,
    version: "1.32",
    run: 0,
  });
  assert.deepEqual([old.entrypoint, old.command], [undefined, ["sh", "-c", "echo hi"]]);
  // the capsule's refusals hold for a plain container too
  const privileged = pod();
  privileged.spec!.containers[0].securityContext = { privileged: true };
  assert.throws(
    () =>
      containerCreateBody(privileged, {
        nodeName: "vk",
        exposePorts: false,
        version: "1.40",
        run: 0,
      }),
    (err: Error) => isInvalidInput(err) && /privileged/.test(err.message),
  );
});

Deno.test("a stopped container's exit code comes from Zun's status text", () => {
  const labels = CONTAINER_TAG.write({ node: "vk", namespace: "ns", name: "web", uid, run: 1 });
  const run = runOfContainer({
    uuid: "u",
    name: "ns.web.1",
    status: "Stopped",
    status_detail: "Exited(4) 4 seconds ago ",
    labels: { ...labels, "vkubelet.io/container": "main" },
    created_at: "2026-12-07 17:16:24",
    updated_at: "2026-12-07 17:16:32",
  }, Date.UTC(2026, 11, 7, 18));
  const state = run.containers.main.state;
  const ended = "terminated" in state ? state.terminated : undefined;
  assert.equal(ended?.exitCode, 4);
  assert.equal(
    ended?.finishedAtMs,
    Date.UTC(2026, 11, 7, 17, 16, 32),
  );
  assert.deepEqual(run.handle, { kind: "container", uuid: "u", run: 1 });
  assert.equal(run.restarts, 1);
});

Deno.test("exec's argv is one string that shlex splits back into the same words", async () => {
  const argv = ["sh", "-c", 'echo it\'s "$HOME" \\ ; exit 7', "", "a b"];
  const joined = shellJoin(argv);
  const python = await new Deno.Command("python3", {
    args: ["-c", "import json,shlex,sys; print(json.dumps(shlex.split(sys.argv[1])))", joined],
  }).output().catch(() => undefined);
  if (!python?.success) return console.log("python3 is missing: the split is not checked");
  assert.deepEqual(JSON.parse(new TextDecoder().decode(python.stdout)), argv);
});

Deno.test("log lines keep their text and their time, to the millisecond", () => {
  const lines = parseLogLines(
    "2026-12-07T17:16:30Z one\n2026-12-07T17:16:30.123456789Z two words\nno time\n",
  );
  assert.deepEqual(lines, [
    { ms: Date.UTC(2026, 11, 7, 17, 16, 30), text: "one\n" },
    { ms: Date.UTC(2026, 11, 7, 17, 16, 30, 123), text: "two words\n" },
    { ms: 0, text: "no time\n" },
  ]);
});

Deno.test("CPU time is read from podman's and procps' TIME columns, summed", () => {
  assert.equal(parseCpuTime("13s"), 13);
  assert.equal(parseCpuTime("1m5s"), 65);
  assert.equal(parseCpuTime("2h0m1s"), 7201);
  assert.equal(parseCpuTime("00:01:05"), 65);
  assert.equal(parseCpuTime("1-02:03:04"), 93784);
  assert.equal(parseCpuTime("soon"), undefined);
  assert.equal(
    cpuSecondsOf({ Titles: ["PID", "TIME"], Processes: [["1", "13s"], ["7", "1m0s"]] }),
    73,
  );
  assert.equal(cpuSecondsOf({ Titles: ["PID", "USER", "COMMAND"], Processes: [] }), undefined);
});
