# cadre worker image: `docker build -t cadre .`, then `docker run --init cadre` (see docker-compose.yml).
#
# Debian (glibc) on purpose, not alpine: @temporalio/worker loads a native Rust module
# (@temporalio/core-bridge) that ships prebuilt for linux *glibc* only (x86_64 and aarch64),
# and the workflow bundler's @swc/core native binding is picked for the libc of the build stage.
# Both stages use the same base so the native modules built/picked in one run in the other.

# ---- build: install everything, compile TypeScript, drop dev dependencies ----
FROM node:22-bookworm-slim AS build
WORKDIR /app

# `npm ci` runs the `prepare` script (`npm run build`: tsc -p tsconfig.build.json -> dist/, then
# the workflow bundle the worker starts from, dist/workflow-bundle.js),
# so the compiler config and the sources must be in place before it.
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm ci --no-audit --no-fund && test -f dist/src/client/cli.js

# Keep only runtime dependencies; --ignore-scripts so `prepare` (tsc, now pruned) does not run again.
# core-bridge ships its native module for every OS in one package: drop the macOS and Windows
# builds (~80 MB); both linux-gnu builds stay so the image can be built for amd64 and arm64.
RUN npm prune --omit=dev --ignore-scripts --no-audit --no-fund \
 && rm -rf node_modules/@temporalio/core-bridge/releases/*-apple-darwin \
           node_modules/@temporalio/core-bridge/releases/*-windows-msvc

# ---- runtime ----
FROM node:22-bookworm-slim AS runtime

# What `shell` steps commonly need besides /bin/sh and coreutils (already in the base image), and
# bubblewrap, the sandbox every tool process runs in (docs/security.md).
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates bubblewrap \
 && rm -rf /var/lib/apt/lists/*

# Where the worker reaches Temporal: the `temporal` service of docker-compose.yml by default.
ENV NODE_ENV=production \
    TEMPORAL_ADDRESS=temporal:7233 \
    TEMPORAL_NAMESPACE=default \
    CADRE_TASK_QUEUE=cadre

WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY bin ./bin
COPY roles ./roles
COPY examples ./examples

# Plan workspaces (tools run in the plan's `workspace`, an absolute path such as /workspace/my-plan).
RUN mkdir -p /workspace && chown node:node /workspace
WORKDIR /workspace
USER node

# node runs as PID 1 here and shell steps start their own process groups: run the container
# with an init (`docker run --init`, `init: true` in compose) so orphaned children are reaped.
# `cadre worker` stops on SIGTERM after running tools finish (shutdownGraceTime 10s).
ENTRYPOINT ["node", "/app/bin/cadre.js"]
CMD ["worker"]
