# Sluice. `make run` starts the demo; `make test` runs every test. Node 24 comes from
# scripts/node-env.sh (installed into .tools/ when the system Node is older).
SHELL := /bin/bash
NODE_BIN := $(shell scripts/node-env.sh)
export PATH := $(CURDIR)/node_modules/.bin:$(NODE_BIN):$(PATH)
export NODE_ENV ?= development

.PHONY: all deps run build images test unit test-k8s reliability e2e-kind check typecheck lint fmt golden crds docs bench bench-smoke clean

all: test

deps: node_modules/.installed
node_modules/.installed: package.json package-lock.json
	@# npm ci trips over biome's optional platform packages missing from the lock (an npm bug); install reads the lock too.
	npm install --no-save --no-audit --no-fund --loglevel=error
	@touch $@

## run: the demo — sample upstreams and the gateway in standalone mode on examples/gateway.yaml
run: deps
	node examples/demo.ts

## build: compile bin/, controller/ and dataplane/ to dist/ (tsconfig.build.json), the JavaScript
## the npm package ships: Node does not strip types under node_modules. `npm pack` runs it
## (prepack); development runs the TypeScript directly.
build: deps
	npm run build

## images: the container image (Dockerfile: both roles, non-root, tini) with a Docker engine;
## IMAGE=… names it (default: the chart's image at the package's version)
IMAGE ?= ghcr.io/sluice-dev/sluice:$(shell node -p 'require("./package.json").version')
images:
	@docker info >/dev/null 2>&1 || { echo "make images: no running Docker engine (docker info failed), so no image was built"; exit 2; }
	docker build -t $(IMAGE) .

## test: type check, lint, unit + integration tests; the Kubernetes tests too when KUBECONFIG is set
test: deps check unit $(if $(KUBECONFIG),test-k8s)

unit: deps
	vitest run

## test-k8s: tests against the Kubernetes API server KUBECONFIG points at (kind, kapi, a real cluster);
## with KUBECONFIG_GATEWAY_API naming a second cluster, test/gateway-api runs on it at the same time
test-k8s: deps
	scripts/test-k8s.sh

## reliability: failure and abuse tests too slow for `make test` (vitest.reliability.config.ts,
## test/reliability/, one file at a time; ~25 min, 15 of them the soak; figures printed, bench/README.md
## "Reliability"): a Redis Cluster and a Redis Sentinel master SIGKILLed under load through three
## gateways; a rolling restart of three gateways behind HAProxy, endpoint removal first and plain
## SIGTERM; a soak of SOAK_SECONDS (default 900) with RSS sampled; 500 slowloris connections;
## HTTP/2 rapid reset, CONTINUATION and SETTINGS floods; 2× overload with --max-in-flight.
## Needs redis-server, redis-cli, haproxy (HAPROXY=path; default /usr/sbin/haproxy) and openssl
reliability: deps
	vitest run --config vitest.reliability.config.ts

## e2e-kind: the Kubernetes tests on a throw-away kind cluster (needs Docker and kind; not on CI's machine)
KIND_CLUSTER ?= sluice-e2e
e2e-kind: deps
	@command -v kind >/dev/null || { echo "e2e-kind needs kind (https://kind.sigs.k8s.io) and Docker"; exit 2; }
	@docker info >/dev/null 2>&1 || { echo "e2e-kind needs a running Docker engine"; exit 2; }
	kind create cluster --name $(KIND_CLUSTER) --kubeconfig .tools/kind-kubeconfig
	KUBECONFIG=$(CURDIR)/.tools/kind-kubeconfig $(MAKE) test-k8s; rc=$$?; \
	  kind delete cluster --name $(KIND_CLUSTER); exit $$rc

check: typecheck lint
typecheck: deps
	tsc --noEmit
lint: deps
	biome check .
fmt: deps
	biome check --write .

## golden: rewrite the golden files of the compiler tests from the current code
golden: deps
	UPDATE_GOLDEN=1 vitest run test/golden

## crds: regenerate crds/*.yaml from the TypeScript schema in controller/api
crds: deps
	node scripts/gen-crds.ts

## docs: rewrite the generated tables: the layers of docs/architecture.md (test/architecture/layers.ts,
## the import-graph test's) and the ingress-nginx annotations of docs/ingress.md (controller/ingress/annotations.ts,
## the controller's); and docs/reference/ (CLI, metrics, CRD fields) from the code
docs: deps
	node scripts/gen-layer-table.ts
	node scripts/gen-reference.ts

## bench: the shared peers harness (floor, nginx, plain sluice, the jwt+rate-limit+transformer chain;
## BENCH_BEFORE=DIR adds another checkout) with ratios to the floor; the same three at half the floor's full-load rate
## (bench/chain.sh --half-load: the tail below saturation); compile times; the idempotency
## plugin against a plain POST; HTTPS/1.1 and h2 against cleartext (bench/tls.ts); an aggregated request against three proxied ones (bench/aggregate.ts). bench/run.ts is the harness without nginx (node bench/run.ts --help)
## bench/soap.ts: a REST → SOAP translated request against the same SOAP POST proxied
## bench/auth.ts: oidc (cached introspection) and mtls-auth (kept-alive, TLS session resumed) against plain TLS proxying
## bench/plugins.sh: a proxy-cache hit against the plain GET and an idempotent replay against the plain POST, next to the floor
## bench/tracing.sh: the plain proxy with tracing off, at 1 % and at 100 % sampling (OTLP to bench/otlp-sink.ts), next to the floor
## bench/controller.ts: the controller and two data planes (the small preset's heap flags) on a private kapi, 5,000 GatewayRoutes:
## cold programming time, edit → Programmed p50/p99, peak RSS, idle admin requests per pod per minute (skipped without ../shared/kapi)
## bench/redis-cost.ts: what Redis spends per idempotent first execution, replay, rate-limit hit and cache hit (CPU µs, memory per key), for sizing it
## bench/instructions.ts: CPU instructions per request (valgrind's callgrind, not timed: repeatable within ~1 %) of the floor,
## plain, chain, chain synced, a cache hit and an idempotent first execution and replay, split into JavaScript, builtins, GC, compilers, …
bench: deps
	bench/chain.sh
	bench/plugins.sh
	bench/tracing.sh
	bench/chain.sh --half-load
	node bench/compile.ts
	node --expose-gc bench/router.ts
	node bench/idempotency.ts
	node bench/tls.ts
	node bench/aggregate.ts
	node bench/soap.ts
	node bench/grpc.ts
	node bench/auth.ts --requests 20000
	node bench/controller.ts --routes 5000
	node bench/redis-cost.ts
	node bench/instructions.ts

## bench-smoke: every benchmark once, for seconds: keeps them working (CI runs it); the figures mean nothing
bench-smoke: deps
	bench/chain.sh -d 1 -w 0 -r 1 --max-load 1000
	bench/plugins.sh -d 1 -w 0 -r 1 --max-load 1000
	bench/tracing.sh -d 1 -w 0 -r 1 -s get --max-load 1000
	bench/chain.sh --half-load --duration 1 --warmup 1
	node bench/compile.ts --sizes 100 --runs 1
	node --expose-gc bench/router.ts --routes 1000 --lookups 10000
	BENCH_DURATION=1 BENCH_WARMUP=0 BENCH_ROUNDS=2 node bench/idempotency.ts
	BENCH_DURATION=1 BENCH_WARMUP=0 node bench/tls.ts
	node bench/aggregate.ts --requests 200 --rounds 1
	node bench/soap.ts --requests 200 --rounds 1
	node bench/grpc.ts --requests 200 --rounds 1
	node bench/auth.ts --requests 200 --rounds 1
	node bench/controller.ts --routes 50 --edits 3 --idle-seconds 4 --source
	BENCH_OPS=200 node bench/redis-cost.ts
# One target under valgrind: each takes 1.3-1.5 min to start and warm there (half the smoke's time with
# two); the replay's has the most parts (Redis, the key, the deadline flags valgrind needs).
	BENCH_TARGETS=idem-replay BENCH_WARMUP=20 BENCH_REQUESTS=20 node bench/instructions.ts

clean:
	rm -rf node_modules .tools .state dist
