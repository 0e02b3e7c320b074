# The two commands a newcomer runs:
#   make demo   bring up the local control plane and run the operator against it
#   make test   build (warnings as errors, and with ASan+UBSan) and run every test
# Everything else here is a building block of those two.

BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_FUZZ ?= build-fuzz
BUILD_ARM64 ?= build-arm64
FUZZ_SECONDS ?= 60
JOBS       ?= 2

.PHONY: all deps build build-asan build-arm64 test unit fuzz demo soak release cluster-up cluster-down clean

all: build

deps:
	scripts/install-deps

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSOP_WERROR=ON >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

build-asan: deps
	cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DSOP_WERROR=ON -DSOP_SANITIZE=ON >/dev/null
	cmake --build $(BUILD_ASAN) -j $(JOBS)

# arm64: cross-compiled (Debian cross toolchain, an arm64 sysroot made with
# mmdebstrap), then --version and the unit tests under qemu-user.
build-arm64: deps
	BUILD_ARM64=$(BUILD_ARM64) JOBS=$(JOBS) scripts/build-arm64

unit: build
	ctest --test-dir $(BUILD) -L unit --output-on-failure

test: deps
	scripts/test

# Each libFuzzer harness of fuzz/ for FUZZ_SECONDS on a scratch copy of its
# corpus (clang build in $(BUILD_FUZZ)); a crash fails and keeps the input.
# FUZZ_MERGE=1 adds the new inputs that gain coverage to fuzz/corpus/.
fuzz: deps
	BUILD_FUZZ=$(BUILD_FUZZ) JOBS=$(JOBS) scripts/fuzz $(FUZZ_SECONDS)

demo: build
	scripts/demo

# The chaos soak at length (tests/soak/soak.c): SOAK_SECONDS of new operations
# (default 30 min), a new seed each run unless SOAK_SEED is given.
SOAK_SECONDS ?= 1800
SOAK_SEED ?= $(shell od -An -N8 -tu8 /dev/urandom | tr -d ' ')
soak: build
	scripts/local-cluster up
	eval "$$(scripts/local-cluster env)" && SOP_SOAK_SECONDS=$(SOAK_SECONDS) SOP_SOAK_SEED=$(SOAK_SEED) build/soak

# The release artifacts in dist/ (scripts/release): the chart (.tgz, index.yaml),
# the image as an OCI archive and its SBOM, the kubectl plugin per architecture
# with its krew manifest, SHA256SUMS. Offline once the test bed's cache is built.
release: deps
	BUILD=$(BUILD) BUILD_ARM64=$(BUILD_ARM64) JOBS=$(JOBS) scripts/release

cluster-up: deps
	scripts/local-cluster up

cluster-down:
	scripts/local-cluster down

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ)
