# Keyhold's container image: the server (the default command) and the `keyhold` CLI, on Debian bookworm-slim,
# running as a non-root user with its data in the /data volume. docs/container-image.md describes building and
# running it; scripts/test-image.sh builds it and checks it as an operator uses it.

# Build stage: what the runtime stage copies, fetched with Debian's Node and npm (which stay here): the
# lockfile's production dependencies, and the Node 24 binary, from the same npm package a host's `npm ci`
# installs through the `node` devDependency (node-linux-<arch>, at the version package-lock.json pins).
FROM docker.io/library/debian:bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends binutils ca-certificates nodejs npm \
 && rm -rf /var/lib/apt/lists/*
# Only for a registry reached through a TLS-intercepting proxy: the path of a CA bundle that trusts it, lent to
# the build (podman build -v BUNDLE:/run/host-ca.crt:ro --build-arg NODE_EXTRA_CA_CERTS=/run/host-ca.crt).
# Unset it changes nothing; set, it lives in this stage only and never reaches the image.
ARG NODE_EXTRA_CA_CERTS
WORKDIR /app
COPY package.json package-lock.json ./
# The binary is stripped of its debug information (129 MB -> 112 MB); the rest of the package (headers,
# docs) is not needed to run it.
RUN version="$(node -p "require('./package-lock.json').packages['node_modules/node'].version")" \
 && arch="$(node -p process.arch)" \
 && mkdir -p /opt/node/bin /tmp/node-package \
 && cd /tmp/node-package \
 && npm pack --silent "node-linux-${arch}@${version}" \
 && tar -xzf node-linux-*.tgz package/bin/node \
 && strip package/bin/node -o /opt/node/bin/node \
 && /opt/node/bin/node --version \
 && cd / && rm -rf /tmp/node-package /root/.npm
# Type declarations and source maps are not needed to run (about 15 MB); npm leaves the folders of skipped
# optional dev dependencies empty.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && rm -rf /root/.npm \
 && find node_modules -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' \) -delete \
 && find node_modules -depth -type d -empty -delete

# Runtime stage: Node, the production dependencies and Keyhold's sources (run as TypeScript by Node 24), owned
# by root and read-only to the user that runs them.
FROM docker.io/library/debian:bookworm-slim
RUN groupadd --system --gid 10001 keyhold \
 && useradd --system --uid 10001 --gid keyhold --home-dir /data --no-create-home --shell /usr/sbin/nologin keyhold \
 && mkdir /data \
 && chown keyhold:keyhold /data \
 && chmod 0700 /data
COPY --from=build /opt/node/bin/node /usr/local/bin/node
WORKDIR /app
COPY --from=build /app/node_modules node_modules
COPY package.json package-lock.json ./
COPY bin bin
COPY src src
# `keyhold …` anywhere in the container (docker exec), with the server's environment, so the same DATABASE_URL.
RUN ln -s /app/bin/keyhold.js /usr/local/bin/keyhold
# The bootstrap root key file is named too: on PostgreSQL it would otherwise go to ./data, which is not writable.
# Node's compile cache (src/main.ts) is off: a new container starts with an empty /tmp, so it never had an entry
# to read, and writing all of them at exit into the container's layer took up to 6 s of a stop.
ENV HOST=0.0.0.0 \
    PORT=8080 \
    DATABASE_URL=sqlite:/data/keyhold.db \
    KEYHOLD_BOOTSTRAP_KEY_FILE=/data/bootstrap-root-key \
    NODE_DISABLE_COMPILE_CACHE=1 \
    MALLOC_ARENA_MAX=2
# The SQLite database, master.key and the bootstrap root key file (written on a first start without
# KEYHOLD_BOOTSTRAP_ROOT_KEY when the output is not a terminal, which a container's is not unless run with -t).
VOLUME ["/data"]
EXPOSE 8080
USER keyhold
# With the image's own Node: ready means the store answers (and Redis, when REDIS_URL is set).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT || 8080}/v1/readiness`, { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Node is PID 1: the server handles SIGTERM itself (finishes the requests in flight, closes the store, exit 0).
STOPSIGNAL SIGTERM
CMD ["node", "--max-semi-space-size=8", "--disable-warning=ExperimentalWarning", "src/main.ts"]
