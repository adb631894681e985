/**
 * Container image references, parsed as the kubelet parses them before it pulls: the docker
 * reference grammar of github.com/distribution/reference (`ParseNormalizedNamed`, reached from
 * kubernetes/kubernetes pkg/util/parsers `ParseImageName`), with its error messages, so that a
 * pod whose image cannot be parsed is reported `InvalidImageName` as the kubelet reports it
 * (pkg/kubelet/images/image_manager.go `applyDefaultImageTag`).
 *
 * ```
 * reference  := name [ ":" tag ] [ "@" digest ]
 * name       := [domain "/"] path-component ["/" path-component]*
 * domain     := (domain-name | "[" IPv6 "]") [":" port]
 * tag        := [\w][\w.-]{0,127}
 * digest     := algorithm ":" hex{32,}     (sha256: 64, sha384: 96, sha512: 128 lowercase hex)
 * ```
 * @module
 */

/** A parsed image reference, normalized as Docker normalizes it (`docker.io/library/...`). */
export interface ImageReference {
  /** `docker.io`, `localhost`, `a.b:5000`, `[::1]:5000`. */
  domain: string;
  /** The repository path below the domain, e.g. `library/busybox`. */
  path: string;
  /** The tag, when one was given. */
  tag?: string;
  /** `algorithm:hex`, when one was given. */
  digest?: string;
}

/** The image reference cannot be parsed; the message is distribution/reference's. */
export class InvalidImageReferenceError extends Error {
  override name = "InvalidImageReferenceError";
}

const ALNUM = "[a-z0-9]+";
const SEPARATOR = "(?:[._]|__|[-]+)";
const PATH_COMPONENT = `${ALNUM}(?:${SEPARATOR}${ALNUM})*`;
const REMOTE_NAME = `${PATH_COMPONENT}(?:/${PATH_COMPONENT})*`;
const DOMAIN_COMPONENT = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
const HOST = `(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[(?:[a-fA-F0-9:]+)\\])`;
const DOMAIN = `${HOST}(?::[0-9]+)?`;
const TAG = "[\\w][\\w.-]{0,127}";
const DIGEST = "[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][0-9a-fA-F]{32,}";
const REFERENCE = new RegExp(
  `^((?:${DOMAIN}/)?${REMOTE_NAME})(?::(${TAG}))?(?:@(${DIGEST}))?$`,
);
const NAME = new RegExp(`^(?:(${DOMAIN})/)?(${REMOTE_NAME})$`);
const IDENTIFIER = /^[a-f0-9]{64}$/;
/** Hex lengths of the digest algorithms a Kubernetes build links in (opencontainers/go-digest). */
const DIGEST_HEX_LENGTH: Record<string, number> = { sha256: 64, sha384: 96, sha512: 128 };
const MAX_PATH_LENGTH = 255;

/** Parses `image` as `ParseNormalizedNamed` does; throws {@link InvalidImageReferenceError}. */
export function parseImageReference(image: string): ImageReference {
  if (IDENTIFIER.test(image)) {
    throw new InvalidImageReferenceError(
      `invalid repository name (${image}), cannot specify 64-byte hexadecimal strings`,
    );
  }
  const [domain, remainder] = splitDomain(image);
  const tagAt = remainder.indexOf(":");
  const remote = tagAt >= 0 ? remainder.slice(0, tagAt) : remainder;
  if (remote.toLowerCase() !== remote) {
    throw new InvalidImageReferenceError(
      `invalid reference format: repository name (${remote}) must be lowercase`,
    );
  }
  return parseFull(`${domain}/${remainder}`);
}

/** Docker's `splitDockerDomain`: which part of a familiar name is the registry. */
function splitDomain(name: string): [string, string] {
  const slash = name.indexOf("/");
  if (slash < 0) return ["docker.io", `library/${name}`];
  const first = name.slice(0, slash);
  let rest = name.slice(slash + 1);
  let domain = "docker.io";
  if (first === "localhost" || /[.:]/.test(first) || first.toLowerCase() !== first) {
    domain = first === "index.docker.io" ? "docker.io" : first;
  } else rest = name;
  if (domain === "docker.io" && !rest.includes("/")) rest = `library/${rest}`;
  return [domain, rest];
}

/** distribution/reference `Parse` of a fully qualified reference. */
function parseFull(text: string): ImageReference {
  const match = REFERENCE.exec(text);
  if (!match) {
    if (text === "") {
      throw new InvalidImageReferenceError("repository name must have at least one component");
    }
    if (REFERENCE.test(text.toLowerCase())) {
      throw new InvalidImageReferenceError("repository name must be lowercase");
    }
    throw new InvalidImageReferenceError("invalid reference format");
  }
  const [, name, tag, digest] = match;
  const parts = NAME.exec(name)!;
  const domain = parts[1] ?? "";
  const path = parts[2];
  if (path.length > MAX_PATH_LENGTH) {
    throw new InvalidImageReferenceError(
      `repository name must not be more than ${MAX_PATH_LENGTH} characters`,
    );
  }
  if (digest !== undefined) checkDigest(digest);
  return { domain, path, tag, digest };
}

/** opencontainers/go-digest `Digest.Validate` for the algorithms Kubernetes links in. */
function checkDigest(digest: string): void {
  const colon = digest.indexOf(":");
  const [algorithm, hex] = [digest.slice(0, colon), digest.slice(colon + 1)];
  const length = DIGEST_HEX_LENGTH[algorithm];
  if (length === undefined) throw new InvalidImageReferenceError("unsupported digest algorithm");
  if (hex.length !== length) throw new InvalidImageReferenceError("invalid checksum digest length");
  if (!/^[a-f0-9]+$/.test(hex)) {
    throw new InvalidImageReferenceError("invalid checksum digest format");
  }
}

/**
 * The kubelet's message for an image it cannot parse (the waiting message and the
 * `InspectFailed` event), or undefined when `image` parses.
 */
export function invalidImageMessage(image: string): string | undefined {
  try {
    parseImageReference(image);
    return undefined;
  } catch (err) {
    if (!(err instanceof InvalidImageReferenceError)) throw err;
    return `Failed to apply default image tag "${image}": couldn't parse image name ` +
      `"${image}": ${err.message}`;
  }
}
