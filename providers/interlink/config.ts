/**
 * The interlink provider's config file (`--provider-config`, YAML or JSON), validated with zod;
 * every problem is reported at once, each naming its field.
 *
 * ```yaml
 * target: interlink                  # interlink: interLink's API server; plugin: a plugin directly
 * url: https://interlink.example:3000  # or socket: /var/run/interlink/api.sock
 * tokenFile: /var/run/secrets/interlink/token   # bearer token, re-read when it changes
 * caFile: /etc/interlink/ca.pem      # extra CA for an https url
 * certFile: /etc/interlink/tls.crt   # client certificate and key for mutual TLS (https),
 * keyFile: /etc/interlink/tls.key    #   re-read when they change
 * statusInterval: 5s                 # one /status call for all known pods, this often
 * requestTimeout: 30s                # each call but a followed log
 * pingTimeout: 8s                    # each ping: under the node's 10 s ping deadline
 * maxRequestBytes: 8Mi               # a /create body larger than this fails the pod
 * capacity: { cpu: "100", memory: 400Gi, pods: "200" }   # until a ping reports resources
 * jobScriptBuilderURL: ""            # interlink target: sent as jobscriptURL on /create
 * statusCacheWindow: 30s             # a pod left out of /status is lost only after this long
 * createAttempts: 3                  # /create refusals (empty 200, 4xx/5xx, JSON error) before
 *                                    #   the pod fails (ProviderFailed)
 * tokenExpirationSeconds: 3153600000 # service-account tokens sent to the plugin (100 years, as
 *                                    #   interLink's virtual kubelet)
 * ```
 * @module
 */
import { z } from "zod";
import {
  credentialUrlProblem,
  durationField,
  type ParsedConfig,
  parseProviderConfig,
  positiveQuantityField,
  quantityToNumber,
} from "../../provider/mod.ts";

const bytes = (fallback: string) =>
  z.string().default(fallback).transform((text, ctx) => {
    const n = quantityToNumber(text);
    if (n === undefined || n < 1024) {
      ctx.addIssue(
        `expected a size of at least 1Ki such as ${fallback}, got ${JSON.stringify(text)}`,
      );
      return z.NEVER;
    }
    return Math.floor(n);
  });

/** `url` with its scheme in lower case (`HTTP://` → `http://`), as the client and its log
 * redaction compare it. */
function lowerScheme(url: string): string {
  return url.replace(/^[A-Za-z][A-Za-z0-9+.-]*:/, (scheme) => scheme.toLowerCase());
}

/** Whether `url` is https, read from the parsed URL (`HTTPS://` is https too). */
function isHttps(url: string | undefined): boolean {
  return url !== undefined && URL.parse(url)?.protocol === "https:";
}

/** The interlink provider's config schema. */
export const interlinkConfigSchema = z.strictObject({
  target: z.enum(["interlink", "plugin"], {
    error:
      "is required: interlink (interLink's API server) or plugin (an interLink plugin directly)",
  }),
  url: z.url({
    protocol: /^https?$/,
    error: "must be an http:// or https:// URL such as http://127.0.0.1:3000",
  }).transform(lowerScheme).optional(),
  socket: z.string().min(1, { error: "must be the path of a unix socket" }).optional(),
  tokenFile: z.string().min(1).optional(),
  caFile: z.string().min(1).optional(),
  certFile: z.string().min(1).optional(),
  keyFile: z.string().min(1).optional(),
  statusInterval: durationField("5s", 100),
  requestTimeout: durationField("30s", 100),
  // Below the core's ping deadline (10 s, core/node/health_monitor.ts): a slow plugin's Ready
  // message is then this call's own, naming the endpoint, not the monitor's generic one.
  pingTimeout: durationField("8s", 100),
  maxRequestBytes: bytes("8Mi"),
  maxResponseBytes: bytes("16Mi"),
  capacity: z.strictObject({
    cpu: positiveQuantityField("100"),
    memory: positiveQuantityField("400Gi"),
    pods: positiveQuantityField("200"),
  }).default({ cpu: "100", memory: "400Gi", pods: "200" }),
  jobScriptBuilderURL: z.string().optional(),
  // The SLURM plugin answers /status from a copy up to 10 s old (interlink-hq/
  // interlink-slurm-plugin f8451d93, pkg/slurm/Status.go:133, 480-485): a pod may be left out of
  // answers for that long without being gone. 30 s covers it and a poll on either side.
  statusCacheWindow: durationField("30s", 0),
  createAttempts: z.int().min(1).max(100).default(3),
  // interLink's virtual kubelet asks 100 years whatever the pod says (interlink-hq/interLink
  // 9ed14a4e, pkg/virtualkubelet/execute.go:574-585): a job cannot be handed a new token.
  tokenExpirationSeconds: z.int().min(600).default(100 * 365 * 24 * 3600),
}).superRefine((c, ctx) => {
  if ((c.url === undefined) === (c.socket === undefined)) {
    ctx.addIssue({
      code: "custom",
      path: ["url"],
      message: "give exactly one of url (http:// or https://) and socket (a unix socket path)",
    });
  }
  // The token is a bearer credential, and so is a password in the url: over plain http to
  // another host anyone on the path reads it, and replays it against interLink. Loopback traffic
  // never leaves the machine. The parsed URL decides (zod accepts `HTTP://`).
  const problem = c.url === undefined ? undefined : credentialUrlProblem(c.url);
  const secret = c.tokenFile
    ? "tokenFile is set: the bearer token"
    : c.url && URL.parse(c.url)?.password
    ? "the url has a password: it"
    : undefined;
  if (problem && secret) {
    ctx.addIssue({
      code: "custom",
      path: ["url"],
      message: `is ${problem}, and ${secret} would travel in clear; use an https:// url (with ` +
        "caFile if its CA is private), a socket, or an http:// url on 127.0.0.1 (a local proxy)",
    });
  }
  if (c.caFile && !isHttps(c.url)) {
    ctx.addIssue({
      code: "custom",
      path: ["caFile"],
      message: "needs an https:// url; remove it or use https",
    });
  }
  if ((c.certFile === undefined) !== (c.keyFile === undefined)) {
    ctx.addIssue({
      code: "custom",
      path: [c.certFile ? "keyFile" : "certFile"],
      message: "is needed with " + (c.certFile ? "certFile" : "keyFile") +
        ": mutual TLS takes the client certificate and its key",
    });
  }
  if (c.certFile && !isHttps(c.url)) {
    ctx.addIssue({
      code: "custom",
      path: ["certFile"],
      message: "needs an https:// url; remove certFile and keyFile or use https",
    });
  }
  if (c.jobScriptBuilderURL && c.target !== "interlink") {
    ctx.addIssue({
      code: "custom",
      path: ["jobScriptBuilderURL"],
      message: "is read by interLink's API server only; remove it or use target: interlink",
    });
  }
});

/** The validated config; durations in milliseconds, sizes in bytes. */
export type InterlinkConfig = z.output<typeof interlinkConfigSchema>;

/** Validates a parsed config file; returns every problem, each with its field. */
export function parseInterlinkConfig(input: unknown): ParsedConfig<InterlinkConfig> {
  return parseProviderConfig(interlinkConfigSchema, input, {
    provider: "interlink",
    required: "naming at least target and url (or socket)",
  });
}
