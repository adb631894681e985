/**
 * The per-namespace allowlist fargate's task roles and aci's managed identities share: namespace
 * b cannot name what only namespace a may use, `"*"` is every namespace's, patterns take `*`, and
 * a namespace named like an Object property finds no list.
 */
import assert from "node:assert/strict";
import {
  checkNamespaceAllows,
  isInvalidInput,
  isTransient,
  type PodServiceAccount,
  podServiceAccount,
} from "../../provider/mod.ts";

const sa = (namespace: string): PodServiceAccount => ({
  account: {},
  namespace,
  what: `serviceaccount ${namespace}/default`,
});
const allowed = {
  a: ["arn:aws:iam::111111111111:role/a-*"],
  "*": ["arn:aws:iam::111111111111:role/shared"],
};
const grant = (value: string) => ({ annotation: "x/role", value, key: "allowedRoles", allowed });

Deno.test("a namespace may name its own patterns' values and the shared list's, nothing else", () => {
  checkNamespaceAllows(sa("a"), grant("arn:aws:iam::111111111111:role/a-writer"));
  checkNamespaceAllows(sa("b"), grant("arn:aws:iam::111111111111:role/shared"));
  assert.throws(
    () => checkNamespaceAllows(sa("b"), grant("arn:aws:iam::111111111111:role/a-writer")),
    (err) =>
      isInvalidInput(err) &&
      /allowedRoles does not allow in namespace b .*add it to allowedRoles\.b/.test(err.message),
  );
  assert.throws(() => checkNamespaceAllows(sa("constructor"), grant("x")), isInvalidInput);
});

Deno.test("case is ignored only when asked (ARM IDs), and a pattern's dots are literal", () => {
  const ids = { annotation: "x/id", key: "ids", allowed: { a: ["/Subscriptions/S/x.y"] } };
  checkNamespaceAllows(sa("a"), { ...ids, value: "/subscriptions/s/x.y" }, { ignoreCase: true });
  assert.throws(() => checkNamespaceAllows(sa("a"), { ...ids, value: "/subscriptions/s/x.y" }));
  assert.throws(() =>
    checkNamespaceAllows(sa("a"), { ...ids, value: "/Subscriptions/S/xzy" }, { ignoreCase: true })
  );
});

Deno.test("a ServiceAccount that cannot be read leaves the pod waiting, saying why", async () => {
  const pod = { metadata: { namespace: "a", name: "p" }, spec: { containers: [] } };
  await assert.rejects(
    podServiceAccount(pod, undefined, "its task role"),
    (err) => isTransient(err) && /serviceaccount a\/default for its task role/.test(err.message),
  );
});
