import assert from "node:assert/strict";
import {
  backendUnreachable,
  BackendUnreachableError,
  isBackendUnreachable,
  redactCredentials,
} from "../../provider/mod.ts";

Deno.test("a ping error names what could not be reached and why, credentials taken out", () => {
  const err = backendUnreachable(
    "https://admin:hunter2@interlink.example:3000",
    new TypeError("error sending request (token=abc123)", {
      cause: new Error("tcp connect error: Connection refused"),
    }),
    { hint: "check that interLink runs" },
  );
  assert.ok(isBackendUnreachable(err));
  assert.ok(err instanceof BackendUnreachableError);
  assert.equal(err.reason, "BackendUnreachable");
  assert.equal(err.endpoint, "https://<redacted>@interlink.example:3000");
  assert.equal(
    err.message,
    "cannot reach https://<redacted>@interlink.example:3000: error sending request " +
      "(token=<redacted>): tcp connect error: Connection refused; check that interLink runs",
  );
});

Deno.test("an error that names the endpoint already is not prefixed with it again", () => {
  const err = backendUnreachable(
    "https://admin:hunter2@interlink.example:3000",
    new Error("https://admin:hunter2@interlink.example:3000 does not answer POST /pinglink"),
  );
  assert.equal(
    err.message,
    "https://<redacted>@interlink.example:3000 does not answer POST /pinglink",
  );
});

Deno.test("redaction covers tokens, passwords, signatures and given secrets", () => {
  const text = redactCredentials(
    "Authorization: Bearer eyJabc.def password=pw1 X-Amz-Signature=f00 client_secret: cs AccessKeySecret=s3cr3t",
    ["s3cr3t"],
  );
  for (const secret of ["eyJabc", "pw1", "f00", " cs", "s3cr3t"]) {
    assert.ok(!text.includes(secret), `${secret} left in ${text}`);
  }
  assert.equal(redactCredentials("DescribeClusters in eu-west-1"), "DescribeClusters in eu-west-1");
});

Deno.test("an error that already says what was unreachable is kept as it is", () => {
  const inner = backendUnreachable("slurmctld on login.example", new Error("timed out"));
  assert.equal(backendUnreachable("somewhere else", inner), inner);
});
