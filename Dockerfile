# One image for both roles: the chart runs it with `controller …` or `dataplane …` as args.
# `make images` builds it (needs a Docker engine). Multi-stage: the build stage compiles the
# TypeScript (Node does not strip types under node_modules, and compiled JS starts faster);
# the runtime stage holds the production dependencies and dist/ only.
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# `npm install` reading the lock rather than `npm ci`: npm leaves biome's optional platform
# packages out of the lock and `npm ci` then refuses it (the Makefile does the same).
RUN npm install --no-save --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY bin bin
COPY controller controller
COPY dataplane dataplane
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE}
# tini as PID 1: forwards SIGTERM to Node (which drains, then exits 0) and reaps the workers of
# `--workers N` should the primary die first.
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production
# glibc malloc, both roles: two arenas instead of eight per core, and a fixed mmap threshold so
# that a freed large buffer (a snapshot pushed or received: megabytes) goes back to the system.
# By default the threshold rises to the largest block freed, and later blocks of that size stay
# in the arenas for good. Measured with bench/controller.ts at 5,000 routes: the controller's
# peak RSS 257 → 232 MiB, the data planes' 245 → 231 MiB (bench/README.md). The benches start
# the processes with these (bench/lib/machine.ts reads the ENV lines of this stage).
ENV MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072
COPY --from=build /src/node_modules node_modules
COPY --from=build /src/dist dist
COPY package.json LICENSE README.md ./
COPY crds crds
COPY examples/gateway.yaml examples/gateway.yaml
RUN chmod +x dist/bin/sluice.js && ln -s /app/dist/bin/sluice.js /usr/local/bin/sluice
# A numeric non-root user, so `runAsNonRoot` can be verified by the kubelet. Nothing is written
# in the image: the chart mounts an emptyDir for --state-dir and a read-only root filesystem.
USER 65532:65532
# proxy (HTTP, HTTPS), data-plane admin, controller metrics
EXPOSE 8080 8443 9901 9902
# Through the binary's #! line, which carries the V8 flags the data plane is sized with.
ENTRYPOINT ["/usr/bin/tini", "--", "sluice"]
CMD ["--help"]
