/**
 * The emulator's validator refuses requests that stray from Alibaba's published ECI metadata
 * (what makes the provider's tests mean something): unknown names, wrong types, list items
 * without their required fields, parameters in the body, an unknown version or action.
 */
import assert from "node:assert/strict";
import { loadOperations, validateRequest } from "../../../tools/harness/eci/metadata.ts";

const ops = loadOperations();
const check = (query: Record<string, string>, extra: { body?: string; version?: string } = {}) =>
  validateRequest(ops, {
    method: "POST",
    action: "CreateContainerGroup",
    version: extra.version ?? "2018-08-08",
    query: new URLSearchParams(query),
    body: new URLSearchParams(extra.body ?? ""),
  });
const valid = {
  RegionId: "cn-hangzhou",
  ContainerGroupName: "web",
  "Container.1.Name": "main",
  "Container.1.Image": "busybox",
};

Deno.test("a request that matches the metadata passes, nested fields from the older files included", () => {
  assert.deepEqual(
    check({
      ...valid,
      "Container.1.Port.1.Port": "80",
      "Container.1.EnvironmentVar.1.FieldRef.FieldPath": "status.podIP",
      "Container.1.LivenessProbe.Exec.Command.1": "true",
      "Volume.1.ConfigFileVolume.ConfigFileToPath.1.Content": "aGk=",
      Cpu: "0.5",
    }),
    [],
  );
});

Deno.test("a request that strays from the metadata is refused, naming each problem", () => {
  const problems = check(
    {
      RegionId: "cn-hangzhou",
      ContainerGroupName: "web",
      "Container.1.Image": "busybox",
      "Container.1.Imag": "x",
      "Container.0.Name": "zero",
      Cpu: "two",
      "Container.1.Port.1.Port": "http",
    },
    { body: "RestartPolicy=Always", version: "2019-01-01" },
  ).join("\n");
  for (
    const expected of [
      "Version 2019-01-01",
      "Container.1.Imag: no such parameter",
      "Container.0.Name: Container is a RepeatList",
      'Cpu: "two" is not a Float',
      'Container.1.Port.1.Port: "http" is not a Integer',
      "Container.1.Name: required",
      "RestartPolicy: sent in the body",
    ]
  ) assert.ok(problems.includes(expected), `${expected} in:\n${problems}`);
  assert.match(
    validateRequest(ops, {
      method: "POST",
      action: "RunPod",
      version: "2018-08-08",
      query: new URLSearchParams(),
      body: new URLSearchParams(),
    })[0],
    /RunPod.*not an ECI operation/,
  );
});
