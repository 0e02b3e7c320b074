# The two commands a newcomer runs:
#   make demo   bring up the local control plane and run the operator against it
#   make test   build (warnings as errors, and with ASan+UBSan) and run every test
# Everything else here is a building block of those two.

BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_FUZZ ?= build-fuzz
FUZZ_SECONDS ?= 60
JOBS       ?= 2

.PHONY: all deps build build-asan test unit fuzz demo cluster-up cluster-down clean

all: build

deps:
	scripts/install-deps

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSOP_WERROR=ON >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

build-asan: deps
	cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DSOP_WERROR=ON -DSOP_SANITIZE=ON >/dev/null
	cmake --build $(BUILD_ASAN) -j $(JOBS)

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

cluster-up: deps
	scripts/local-cluster up

cluster-down:
	scripts/local-cluster down

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ)
