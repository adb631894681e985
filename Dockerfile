# vkubelet's container image: `deno compile` in the pinned Deno image, then only the binary on
# a small Debian base, as a non-root user (uid 65532).
#   docker build --build-arg VKUBELET_COMMIT="$(git rev-parse HEAD)" -t vkubelet:0.1.0 .
#   install -d -o 65532 -g 65532 -m 0700 /var/lib/vkubelet-image
#   install -o 65532 -g 65532 -m 0600 /etc/vkubelet/config.yaml /etc/vkubelet/kubeconfig \
#     /var/lib/vkubelet-image/
#   docker run --rm -v /var/lib/vkubelet-image:/etc/vkubelet:ro vkubelet:0.1.0
# /etc/vkubelet as docs/install.md installs it is root's alone (0700, files 0600: no group a pod
# could name reads it), so the image (uid 65532) gets copies of its own; on a host that also runs
# the process provider, keep 65532 out of that provider's allowedIds.
# VKUBELET_COMMIT is what `vkubelet --version` names (the build context has no .git).
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
ARG VKUBELET_COMMIT=""
# The binary for the architecture being built (docker buildx --platform picks it).
RUN case "$(uname -m)" in \
      x86_64) target=x86_64-unknown-linux-gnu ;; \
      aarch64) target=aarch64-unknown-linux-gnu ;; \
      *) echo "unsupported architecture $(uname -m)" >&2; exit 1 ;; \
    esac \
    && deno task compile --target="$target" --out-dir=dist \
       ${VKUBELET_COMMIT:+--commit="$VKUBELET_COMMIT"} \
    && cp "dist/vkubelet-$target" /vkubelet

FROM debian:12-slim
# CA certificates only (read with DENO_TLS_CA_STORE=system). No curl and no HEALTHCHECK: probe
# from outside instead — the kubelet API's /healthz answers 401 to a caller without credentials,
# and the metrics port's /healthz (when enabled) says leader or standby.
# Versions are left to the base image's security updates.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 65532 vkubelet \
    && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /var/lib/vkubelet \
       --shell /usr/sbin/nologin vkubelet \
    && install -d -o 65532 -g 65532 -m 0700 /var/lib/vkubelet
COPY --from=build /vkubelet /usr/local/bin/vkubelet
USER 65532:65532
EXPOSE 10250
ENTRYPOINT ["/usr/local/bin/vkubelet"]
CMD ["--config=/etc/vkubelet/config.yaml"]
