/**
 * The interlink config refuses, at start, a bearer token sent over plain http to another host
 * (anyone on the path could read and replay it); https, a unix socket, or http on loopback (a
 * local proxy) are accepted.
 */
import assert from "node:assert/strict";
import { FakeClock } from "../../../base/fake_clock.ts";
import { getLogger } from "../../../base/log.ts";
import { isInvalidInput } from "../../../provider/mod.ts";
import { createProvider, parseInterlinkConfig } from "../../../providers/interlink/mod.ts";

const TOKEN = { target: "interlink", tokenFile: "/var/run/secrets/interlink/token" };

Deno.test("a tokenFile with an http:// url to another host is refused, saying why and what to use", () => {
  for (
    const url of ["http://interlink.example:3000", "http://10.0.0.5:3000", "http://[fd00::1]/"]
  ) {
    const parsed = parseInterlinkConfig({ ...TOKEN, url });
    assert.ok(!parsed.ok, `${url} was accepted`);
    assert.match(
      parsed.errors.join("\n"),
      /^url: is plain http to .*, which is not this machine, and tokenFile is set: the bearer token would travel in clear; use an https:\/\/ url/m,
    );
  }
});

Deno.test("a tokenFile over https, a socket or loopback http is accepted, and http without a token", () => {
  const accepted = [
    { ...TOKEN, url: "https://interlink.example:3000" },
    { ...TOKEN, socket: "/var/run/interlink/api.sock" },
    { ...TOKEN, url: "http://127.0.0.1:3000" },
    { ...TOKEN, url: "http://127.3.2.1:3000" },
    { ...TOKEN, url: "http://localhost:3000" },
    { ...TOKEN, url: "http://[::1]:3000" },
    { target: "plugin", url: "http://interlink.example:3000" },
  ];
  for (const config of accepted) {
    const parsed = parseInterlinkConfig(config);
    assert.ok(parsed.ok, `${JSON.stringify(config)}: ${!parsed.ok && parsed.errors}`);
  }
});

Deno.test("the provider does not start with a token over plain http to another host", () => {
  const clock = new FakeClock();
  assert.throws(
    () =>
      createProvider({ ...TOKEN, url: "http://interlink.example:3000" }, {
        nodeName: "vk-0",
        log: getLogger(["vkubelet", "test"]),
        clock,
        internalIp: "127.0.0.1",
        daemonPort: 10250,
        signal: new AbortController().signal,
      }),
    (err: Error) => isInvalidInput(err) && /travel in clear/.test(err.message),
  );
});

Deno.test("a tokenFile with an upper-case HTTP:// url to another host is refused: the parsed scheme decides", () => {
  // Strings only: config validation never dials them.
  for (const url of ["HTTP://10.0.0.1:3000", "Http://interlink.example:3000"]) {
    const parsed = parseInterlinkConfig({ ...TOKEN, url });
    assert.ok(!parsed.ok, `${url} was accepted`);
    assert.match(
      parsed.errors.join("\n"),
      /^url: is plain http to .*, which is not this machine, and tokenFile is set/m,
    );
  }
  const loopback = parseInterlinkConfig({ ...TOKEN, url: "HTTP://127.0.0.1:3000" });
  assert.ok(loopback.ok, !loopback.ok ? loopback.errors.join("; ") : "");
});

Deno.test("a password in a plain http url to another host is refused, with or without a tokenFile", () => {
  const parsed = parseInterlinkConfig({ target: "plugin", url: "http://vk:s3cret@10.0.0.1:3000" });
  assert.ok(!parsed.ok, "the password would go in clear");
  assert.match(parsed.errors.join("\n"), /^url: is plain http to 10\.0\.0\.1:3000.*password/m);
  for (const url of ["https://vk:s3cret@interlink.example", "http://vk:s3cret@127.0.0.1:3000"]) {
    const ok = parseInterlinkConfig({ target: "plugin", url });
    assert.ok(ok.ok, `${url}: ${!ok.ok && ok.errors}`);
  }
});

Deno.test("an upper-case HTTPS:// url takes caFile and client certificates, and reaches the client in lower case", () => {
  const parsed = parseInterlinkConfig({
    ...TOKEN,
    url: "HTTPS://interlink.example:3000",
    caFile: "/etc/interlink/ca.pem",
    certFile: "/etc/interlink/tls.crt",
    keyFile: "/etc/interlink/tls.key",
  });
  assert.ok(parsed.ok, !parsed.ok ? parsed.errors.join("; ") : "");
  assert.equal(parsed.config.url, "https://interlink.example:3000");
});
