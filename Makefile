# xdslab — build, run, test, benchmark.
GO      ?= go
PKGS    ?= ./...
BENCH   ?= .
BENCHTIME ?= 1x
SCENARIO ?= quickstart
OUT     ?= out
# The envoy module's vtprotobuf marshalling code (MarshalVTStrict, SizeVT) only compiles with
# this tag; without it generators fall back to proto.Marshal, about twice as slow.
TAGS    ?= vtprotobuf
GOTAGS  := -tags $(TAGS)

.PHONY: all build run test test-skips test-istio test-short bench lint fuzz clean

all: lint test

build:
	$(GO) build $(GOTAGS) -o bin/xdslab ./cmd/xdslab

# The main job: the built-in default scenario against the in-process control plane.
run: build
	./bin/xdslab run $(SCENARIO) --out $(OUT)

test: test-skips
	$(GO) test $(GOTAGS) -race -count=1 -timeout 15m $(PKGS)
	# Measurement truth at its real bound (2 ms), with 3 clients and with 500: the race detector
	# slows gRPC too much for it.
	$(GO) test $(GOTAGS) -count=1 -run '^TestRunMeasurementTruth(Fleet)?$$' ./bench/run

# Tests that need tools this machine may lack skip without them (go test prints no skip): say
# which before the run.
KUBE_ASSETS ?= $(or $(XDSLAB_KUBE_ASSETS),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/xdslab/kube-testenv)
test-skips:
	@command -v prometheus >/dev/null && command -v promtool >/dev/null || echo "note: prometheus/promtool not on PATH: the dashboards' rule and live tests will skip (apt-get install prometheus)"
	@command -v kubectl >/dev/null || echo "note: kubectl not on PATH: deploy/kubernetes's manifest tests will skip (apt-get install kubernetes-client)"
	@test -x "$(KUBE_ASSETS)/kube-apiserver" -a -x "$(KUBE_ASSETS)/etcd" || echo "note: no kube-apiserver and etcd in $(KUBE_ASSETS): controlplane/registry/kube's integration tests will skip (hack/kube-testenv.sh, then XDSLAB_KUBE_ASSETS)"

# The Istio test module (hack/istio, a module of its own so istio.io/istio stays out of ours):
# the fleet and the lab against Istio's own DiscoveryServer with its default mesh config.
test-istio:
	cd hack/istio && $(GO) test -count=1 -timeout 15m ./...

test-short:
	$(GO) test $(GOTAGS) -short -count=1 $(PKGS)

# Benchmarks report domain figures via b.ReportMetric; compare runs with benchstat or `xdslab compare`.
bench:
	$(GO) test $(GOTAGS) -run '^$$' -bench '$(BENCH)' -benchmem -benchtime $(BENCHTIME) -timeout 30m $(PKGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(GOTAGS) $(PKGS)

# Run every fuzz target for FUZZTIME each (default 10s).
FUZZTIME ?= 10s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test $(GOTAGS) -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

clean:
	rm -rf bin $(OUT)
