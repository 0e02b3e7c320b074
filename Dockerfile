# stateful-operator image: build on Debian bookworm, run on bookworm-slim with
# only the shared libraries the binary links, as an unprivileged user.
#   docker build -t stateful-operator:0.1.0 .
#   docker build --build-arg ARCH=arm64 -t stateful-operator:0.1.0-arm64 .
# ARCH is the image's Debian architecture (amd64 or arm64). The build stage
# runs on the build machine's own and cross-compiles for another with
# Debian's cross toolchain (cmake/aarch64-linux-gnu.cmake); the runtime stage
# runs ARCH's packages, so a foreign ARCH needs qemu-user through binfmt_misc.
# SOP_COMMIT: the commit --version reports (the build context has no .git).
# SOP_VERSION: the version the image's labels give (the binary's is CMake's).
# RUNTIME_BASE: the runtime stage's image (scripts/testbed-images names its own).
# deploy/base/deployment.yaml runs this tag with imagePullPolicy IfNotPresent.
ARG ARCH=amd64
ARG RUNTIME_BASE=debian:bookworm-slim

FROM debian:bookworm AS build
ARG ARCH
RUN dev="libcurl4-openssl-dev libjansson-dev libyaml-dev libmicrohttpd-dev libssl-dev libcmocka-dev zlib1g-dev" \
 && case "$ARCH" in \
      "$(dpkg --print-architecture)") cross= ;; \
      arm64) dpkg --add-architecture arm64 && cross=gcc-aarch64-linux-gnu && dev=$(printf '%s:arm64 ' $dev) ;; \
      *) echo "ARCH=$ARCH: the build machine's own architecture, or arm64" >&2 && exit 1 ;; \
    esac \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config $cross $dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# After the package layer, so a new commit keeps it cached.
ARG SOP_COMMIT=
RUN toolchain= \
 && if [ "$ARCH" != "$(dpkg --print-architecture)" ]; then toolchain=-DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake; fi \
 && cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSOP_WERROR=ON -DSOP_COMMIT="$SOP_COMMIT" $toolchain \
 && cmake --build build --target stateful-operator

FROM --platform=linux/${ARCH} ${RUNTIME_BASE}
# The runtime halves of the -dev packages above (libcmocka is for tests only);
# ca-certificates for API servers with publicly signed certificates (in-cluster,
# the service-account CA is used); rsync (Debian's keeps ACLs and xattrs) and
# the shell tools of the copy script, so this image is also the default image
# of the resize copy Jobs (--copy-image).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libcurl4 libjansson4 libyaml-0-2 libmicrohttpd12 libssl3 ca-certificates rsync mawk \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/build/stateful-operator /usr/local/bin/stateful-operator
# OCI annotations as labels (after the package layer, so it stays cached).
# SOP_VERSION: CMakeLists.txt's project version (scripts/testbed-images passes it).
ARG SOP_VERSION=0.1.0
ARG SOP_COMMIT=
LABEL org.opencontainers.image.title="stateful-operator" \
      org.opencontainers.image.description="Resizes StatefulSet volumes, cleans up after scale-downs and runs StatefulClusters." \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/stateful-operator/stateful-operator" \
      org.opencontainers.image.version="${SOP_VERSION}" \
      org.opencontainers.image.revision="${SOP_COMMIT}"
# Fails the build if a shared library is missing.
RUN /usr/local/bin/stateful-operator --version
# 65532 = "nonroot" by convention (distroless); matches the Deployment's
# securityContext.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/stateful-operator"]
