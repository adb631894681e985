/**
 * Keys, PKCS#10 certificate requests and self-signed X.509 certificates, made with WebCrypto
 * (ECDSA P-256, SHA-256) and the small DER encoder in `./der.ts` — enough for a kubelet's
 * serving certificate (RFC 2986, RFC 5280). Reading certificates is left to `node:crypto`'s
 * `X509Certificate`.
 * @module
 */
import {
  bitString,
  concat,
  explicit,
  implicitPrimitive,
  integer,
  octetString,
  oid,
  sequence,
  set,
  time,
  tlv,
  utf8String,
} from "./der.ts";

/** A P-256 key pair that can be exported. */
export type EcKeyPair = CryptoKeyPair;

/** Who a certificate is for, and the names it is valid for. */
export interface CertificateSubject {
  commonName: string;
  organizations?: string[];
  dnsNames?: string[];
  ipAddresses?: string[];
}

const OID = {
  ecdsaWithSha256: "1.2.840.10045.4.3.2",
  commonName: "2.5.4.3",
  organization: "2.5.4.10",
  extensionRequest: "1.2.840.113549.1.9.14",
  subjectAltName: "2.5.29.17",
  keyUsage: "2.5.29.15",
  extKeyUsage: "2.5.29.37",
  basicConstraints: "2.5.29.19",
  serverAuth: "1.3.6.1.5.5.7.3.1",
} as const;

/** A new ECDSA P-256 key pair. */
export async function generateKeyPair(): Promise<EcKeyPair> {
  return await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
    "sign",
    "verify",
  ]) as CryptoKeyPair;
}

/** The private key as PKCS#8 PEM (`BEGIN PRIVATE KEY`). */
export async function privateKeyPem(keys: EcKeyPair): Promise<string> {
  return pem(
    "PRIVATE KEY",
    new Uint8Array(await crypto.subtle.exportKey("pkcs8", keys.privateKey)),
  );
}

/** DER in PEM armour with 64-character lines. */
export function pem(label: string, der: Uint8Array): string {
  let binary = "";
  for (const byte of der) binary += String.fromCharCode(byte);
  const lines = btoa(binary).match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}

/** A PKCS#10 CertificationRequest, signed by `keys`, with the names as a SAN extension request. */
export async function createCsr(keys: EcKeyPair, subject: CertificateSubject): Promise<string> {
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", keys.publicKey));
  const extensions = sequence(subjectAltName(subject));
  const attributes = explicit(0, sequence(oid(OID.extensionRequest), set(extensions)));
  const info = sequence(integer(0), name(subject), spki, attributes);
  return pem("CERTIFICATE REQUEST", await signed(info, keys.privateKey));
}

/** Options for {@link createSelfSignedCertificate}. */
export interface SelfSignedOptions {
  notBefore: Date;
  notAfter: Date;
}

/** A self-signed serving certificate (serverAuth, not a CA) for `subject`. */
export async function createSelfSignedCertificate(
  keys: EcKeyPair,
  subject: CertificateSubject,
  options: SelfSignedOptions,
): Promise<string> {
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", keys.publicKey));
  const serial = crypto.getRandomValues(new Uint8Array(16));
  serial[0] &= 0x7f;
  const extensions = sequence(
    extension(OID.basicConstraints, sequence(), true),
    // digitalSignature only: the usage an ECDSA TLS server key needs.
    extension(OID.keyUsage, tlv(0x03, Uint8Array.of(7, 0x80)), true),
    extension(OID.extKeyUsage, sequence(oid(OID.serverAuth))),
    subjectAltName(subject),
  );
  const tbs = sequence(
    explicit(0, integer(2)),
    integer(serial),
    sequence(oid(OID.ecdsaWithSha256)),
    name(subject),
    sequence(time(options.notBefore), time(options.notAfter)),
    name(subject),
    spki,
    explicit(3, extensions),
  );
  return pem("CERTIFICATE", await signed(tbs, keys.privateKey));
}

/** `SEQUENCE { tbs, algorithm, BIT STRING signature }` with an ECDSA-SHA256 signature. */
async function signed(tbs: Uint8Array, key: CryptoKey): Promise<Uint8Array> {
  const raw = new Uint8Array(
    await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, key, tbs as BufferSource),
  );
  // WebCrypto gives r || s; X.509 wants SEQUENCE { INTEGER r, INTEGER s }.
  const half = raw.length / 2;
  const signature = sequence(integer(raw.subarray(0, half)), integer(raw.subarray(half)));
  return sequence(tbs, sequence(oid(OID.ecdsaWithSha256)), bitString(signature));
}

/** The distinguished name: O first, then CN, in Go's `pkix.Name` order. */
function name(subject: CertificateSubject): Uint8Array {
  const rdns = (subject.organizations ?? []).map((o) =>
    set(sequence(oid(OID.organization), utf8String(o)))
  );
  rdns.push(set(sequence(oid(OID.commonName), utf8String(subject.commonName))));
  return sequence(...rdns);
}

function extension(id: string, value: Uint8Array, critical = false): Uint8Array {
  const flag = critical ? [Uint8Array.of(0x01, 0x01, 0xff)] : [];
  return sequence(oid(id), ...flag, octetString(value));
}

function subjectAltName(subject: CertificateSubject): Uint8Array {
  const names = [
    ...(subject.dnsNames ?? []).map((d) => implicitPrimitive(2, new TextEncoder().encode(d))),
    ...(subject.ipAddresses ?? []).map((ip) => implicitPrimitive(7, ipBytes(ip))),
  ];
  return extension(OID.subjectAltName, sequence(...names));
}

/** The bytes of an IPv4 or IPv6 address. */
export function ipBytes(ip: string): Uint8Array {
  const v4 = ip.match(/^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/);
  if (v4) {
    const parts = v4.slice(1).map(Number);
    if (parts.every((p) => p <= 255)) return Uint8Array.from(parts);
  } else if (ip.includes(":")) {
    const [head, tail, extra] = ip.split("::");
    const groups = (s: string | undefined) => s ? s.split(":") : [];
    const left = groups(head), right = groups(tail);
    const missing = 8 - left.length - right.length;
    const all = tail === undefined ? left : [...left, ...Array(missing).fill("0"), ...right];
    if (extra === undefined && all.length === 8 && all.every((g) => /^[0-9a-f]{1,4}$/i.test(g))) {
      return concat(...all.map((g) => {
        const n = parseInt(g, 16);
        return Uint8Array.of(n >> 8, n & 0xff);
      }));
    }
  }
  throw new TypeError(`${JSON.stringify(ip)} is not an IP address`);
}
