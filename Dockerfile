# stateful-operator image: build on Debian bookworm, run on bookworm-slim with
# only the shared libraries the binary links, as an unprivileged user.
#   docker build -t stateful-operator:0.1.0 .
# deploy/base/deployment.yaml runs this tag with imagePullPolicy IfNotPresent.

FROM debian:bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config \
      libcurl4-openssl-dev libjansson-dev libyaml-dev libmicrohttpd-dev libssl-dev libcmocka-dev zlib1g-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSOP_WERROR=ON \
 && cmake --build build --target stateful-operator

FROM debian:bookworm-slim
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
# Fails the build if a shared library is missing.
RUN /usr/local/bin/stateful-operator --version
# 65532 = "nonroot" by convention (distroless); matches the Deployment's
# securityContext.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/stateful-operator"]
