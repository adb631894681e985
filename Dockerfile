# vkubelet's container image: `deno compile` in the pinned Deno image, then only the binary on
# a small Debian base, as a non-root user.
#   docker build -t vkubelet:0.1.0 .
#   docker run --rm -v /etc/vkubelet:/etc/vkubelet:ro vkubelet:0.1.0
# The compile stage downloads npm packages and Deno's denort runtime, so it needs network.

FROM denoland/deno:2.9.6 AS build
WORKDIR /src
COPY deno.json deno.lock main.ts ./
COPY base/ base/
COPY k8s/ k8s/
COPY spdy/ spdy/
COPY x509/ x509/
COPY provider/ provider/
COPY core/ core/
COPY providers/ providers/
COPY app/ app/
COPY scripts/ scripts/
# The binary for the architecture being built (docker buildx --platform picks it).
RUN case "$(uname -m)" in \
      x86_64) target=x86_64-unknown-linux-gnu ;; \
      aarch64) target=aarch64-unknown-linux-gnu ;; \
      *) echo "unsupported architecture $(uname -m)" >&2; exit 1 ;; \
    esac \
    && deno task compile --target="$target" --out-dir=dist \
    && cp "dist/vkubelet-$target" /vkubelet

FROM debian:12-slim
# curl only for the HEALTHCHECK below. Versions are left to the base image's security updates.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 65532 vkubelet \
    && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /var/lib/vkubelet \
       --shell /usr/sbin/nologin vkubelet \
    && install -d -o 65532 -g 65532 -m 0700 /var/lib/vkubelet
COPY --from=build /vkubelet /usr/local/bin/vkubelet
USER 65532:65532
EXPOSE 10250
# Liveness without credentials: /healthz on the kubelet API answers 401 to a caller without
# credentials (200 if anonymous access is allowed), which shows the TLS listener and the HTTP
# stack are serving; nothing is disclosed and no credential is kept in the image. A refused
# connection, a timeout or a 5xx marks the container unhealthy.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["sh", "-c", "code=$(curl -sk -o /dev/null -w '%{http_code}' https://127.0.0.1:${KUBELET_PORT:-10250}/healthz); case \"$code\" in 200|401|403) exit 0 ;; *) exit 1 ;; esac"]
ENTRYPOINT ["/usr/local/bin/vkubelet"]
CMD ["--config=/etc/vkubelet/config.yaml"]
