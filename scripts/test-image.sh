#!/usr/bin/env bash
# Builds Keyhold's container image (Dockerfile) with podman and checks it the way an operator uses it
# (docs/container-image.md): on a fresh volume the server answers, the bootstrap root key from the volume's file
# creates an API and a key that verifies, `keyhold root-keys create` through exec makes a working root key, the
# process runs as a non-root user, the health status turns healthy, SIGTERM stops it within 5 s with exit 0,
# a new container on the same volume keeps every key, and a request in flight at SIGTERM is answered; all of
# it once more with a read-only root filesystem and a tmpfs /tmp. Then SIGTERM during a start, and (with
# KEYHOLD_TEST_POSTGRES_URL set) a round on PostgreSQL and Redis with KEYHOLD_BOOTSTRAP_ROOT_KEY. On the image:
# a HEALTHCHECK, no dev dependency, no npm and no host CA in it, and its size (at most 250 MB), printed.
#
# It installs podman, runc and debootstrap with apt-get when they are missing (as root), and makes the base
# image docker.io/library/debian:bookworm-slim when podman does not have it: from a rootfs tarball cached in
# KEYHOLD_IMAGE_CACHE (default /var/cache/keyhold-ci, or ~/.cache/keyhold-ci when not root), made with
# debootstrap and slimmed as Debian slims its own image when that is missing too. No registry is needed.
# Every container, volume and tag carries this run's id and is removed on exit, so runs can overlap.
set -euo pipefail
cd "$(dirname "$0")/.."

BASE=docker.io/library/debian:bookworm-slim
MAX_IMAGE_MB=250
MAX_STOP_SECONDS=5
RUN_ID="$(date +%s)-$$"
IMAGE="localhost/keyhold:test-$RUN_ID"
if [ "$(id -u)" = 0 ]; then CACHE="${KEYHOLD_IMAGE_CACHE:-/var/cache/keyhold-ci}"; else CACHE="${KEYHOLD_IMAGE_CACHE:-$HOME/.cache/keyhold-ci}"; fi
STARTED=$SECONDS

say() { printf '[test-image %4ds] %s\n' "$((SECONDS - STARTED))" "$*"; }
fail() {
  printf '[test-image %4ds] FAIL: %s\n' "$((SECONDS - STARTED))" "$*" >&2
  exit 1
}

# --- Tools -------------------------------------------------------------------------------------------------
missing=()
for tool in podman runc debootstrap; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ "${#missing[@]}" -gt 0 ]; then
  [ "$(id -u)" = 0 ] || fail "missing ${missing[*]}: install them (apt-get install podman runc debootstrap) or run this as root"
  say "installing ${missing[*]} (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null ||
    { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; }
fi

WORK="$(mktemp -d)"
# crun (podman's default runtime) fails on this kind of machine, and so do the default ulimits: runc, cgroupfs,
# no default ulimits, and the host's network for builds and containers.
cat >"$WORK/containers.conf" <<'EOF'
[containers]
default_ulimits = []
EOF
export CONTAINERS_CONF="$WORK/containers.conf"
pm() { podman --runtime runc --cgroup-manager cgroupfs "$@"; }

CONTAINERS=()
PG_SCHEMA=
VOLUMES=()
cleanup() {
  set +e
  for c in "${CONTAINERS[@]}"; do pm rm -f -v -t 0 "$c" >/dev/null 2>&1; done
  if [ -n "$PG_SCHEMA" ]; then
    pm run --rm --network host --no-healthcheck --entrypoint node "$IMAGE" -e \
      'const c = new (require("pg").Client)(process.argv[1]); c.connect().then(() => c.query(`DROP SCHEMA IF EXISTS "${process.argv[2]}" CASCADE`)).finally(() => c.end())' \
      "$KEYHOLD_TEST_POSTGRES_URL" "$PG_SCHEMA" >/dev/null 2>&1
  fi
  for v in "${VOLUMES[@]}"; do pm volume rm -f "$v" >/dev/null 2>&1; done
  # Untags only when another run holds the same image; the build cache stays for the next run.
  pm rmi "$IMAGE" >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- Base image --------------------------------------------------------------------------------------------
# Debian's debootstrap minbase, slimmed like the published bookworm-slim (no .debs, apt lists, docs, man pages or
# locales, and dpkg told not to install them later), imported under the public name so the Dockerfile builds
# unchanged elsewhere.
make_rootfs_tarball() {
  local tarball="$1" rootfs="$CACHE/rootfs.$$"
  rm -rf "$rootfs"
  say "debootstrap --variant=minbase bookworm (about 30 s)"
  debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian >"$WORK/debootstrap.log" 2>&1 ||
    { tail -20 "$WORK/debootstrap.log" >&2; fail "debootstrap failed"; }
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/lib/apt/lists/*
  rm -rf "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/*
  find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
  rm -f "$rootfs/etc/apt/sources.list"
  cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
  cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
  echo 'APT::Install-Recommends "false";' >"$rootfs/etc/apt/apt.conf.d/docker-no-recommends"
  : >"$rootfs/etc/resolv.conf"
  tar --numeric-owner -C "$rootfs" -cf "$tarball.$$" . && mv "$tarball.$$" "$tarball"
  rm -rf "$rootfs"
}

ensure_base_image() {
  pm image exists "$BASE" && return
  mkdir -p "$CACHE"
  exec 9>"$CACHE/base-image.lock"
  flock 9
  if ! pm image exists "$BASE"; then
    local tarball="$CACHE/debian-bookworm-slim-rootfs.tar"
    [ -s "$tarball" ] || make_rootfs_tarball "$tarball"
    say "importing $BASE from $tarball"
    pm import -q --change 'CMD ["bash"]' "$tarball" "$BASE" >/dev/null
  fi
  flock -u 9
}

# --- Helpers -----------------------------------------------------------------------------------------------
free_port() { node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'; }
# `json FIELD`: a field of the JSON object on stdin (a dotted path; array indexes are numbers).
json() { node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => { let v = JSON.parse(s); for (const k of process.argv[1].split(".")) v = v?.[k]; process.stdout.write(v === undefined ? "" : typeof v === "string" ? v : JSON.stringify(v)); })' "$1"; }
post() { curl -sS -X POST "http://127.0.0.1:$1$2" -H "Authorization: Bearer $3" -H 'Content-Type: application/json' -d "$4"; }
status_of() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1$2" -H "Authorization: Bearer $3"; }

# `start NAME PORT VOLUME [podman run options…]`: a container of the image on the volume, answering /v1/liveness.
start() {
  local name="$1" port="$2" volume="$3"
  shift 3
  CONTAINERS+=("$name")
  # Where systemd is not running, podman says it cannot schedule the HEALTHCHECK (this script runs it instead).
  pm run -d --name "$name" --network host -e PORT="$port" -v "$volume:/data" "$@" "$IMAGE" >/dev/null 2>"$WORK/run.err" ||
    { cat "$WORK/run.err" >&2; fail "podman run $name failed"; }
  for _ in $(seq 1 120); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/liveness")" = 200 ] && return
    [ "$(pm inspect --format '{{.State.Running}}' "$name")" = true ] || { pm logs "$name" >&2; fail "$name exited during its start"; }
    sleep 0.5
  done
  pm logs "$name" >&2
  fail "$name: /v1/liveness did not answer within 60 s"
}

# `stop NAME`: SIGTERM (podman stop sends the image's STOPSIGNAL, SIGKILL after 10 s); exit 0 within 5 s.
stop() {
  local name="$1" t0 ms code
  t0=$(date +%s%N)
  pm stop -t 10 "$name" >/dev/null 2>"$WORK/stop.err" || { cat "$WORK/stop.err" >&2; fail "podman stop $name failed"; }
  ms=$((($(date +%s%N) - t0) / 1000000))
  code=$(pm inspect --format '{{.State.ExitCode}}' "$name")
  [ "$code" = 0 ] || { pm logs "$name" >&2; fail "$name: exit code $code after SIGTERM (0 expected)"; }
  [ "$ms" -le $((MAX_STOP_SECONDS * 1000)) ] || fail "$name: SIGTERM took $ms ms to stop it (at most ${MAX_STOP_SECONDS} s)"
  pm logs "$name" 2>&1 | grep >/dev/null '"msg":"shutting down"' || fail "$name: no 'shutting down' log line after SIGTERM"
  say "  $name: SIGTERM -> exit 0 in $ms ms"
}

expect_valid() {
  local port="$1" key="$2" what="$3" valid
  valid=$(post "$port" /v1/keys.verifyKey none "{\"key\":\"$key\"}" | json valid)
  [ "$valid" = true ] || fail "$what does not verify (valid=$valid)"
}

# `round LABEL [podman run options…]`: every check of one way of running the image, on a fresh volume.
round() {
  local label="$1"
  shift
  local volume="keyhold-ci-$RUN_ID-$label" a="keyhold-ci-$RUN_ID-$label-a" b="keyhold-ci-$RUN_ID-$label-b"
  local port root api key workspace cli_root cli_key uid health
  say "round '$label' ($*)"
  VOLUMES+=("$volume")
  pm volume create "$volume" >/dev/null

  port=$(free_port)
  start "$a" "$port" "$volume" "$@"
  say "  $a: /v1/liveness answers on port $port"

  pm logs "$a" 2>&1 | grep >/dev/null 'bootstrap root key (\*) was written to /data/bootstrap-root-key' ||
    fail "$a: the log does not name /data/bootstrap-root-key"
  root=$(pm exec "$a" cat /data/bootstrap-root-key)
  [[ "$root" == kh_root_* ]] || fail "$a: /data/bootstrap-root-key holds no root key"
  api=$(post "$port" /v1/apis.createApi "$root" '{"name":"image-check"}' | json apiId)
  [ -n "$api" ] || fail "the bootstrap root key did not create an API"
  key=$(post "$port" /v1/keys.createKey "$root" "{\"apiId\":\"$api\",\"prefix\":\"img\"}" | json key)
  [ -n "$key" ] || fail "the bootstrap root key did not create a key"
  expect_valid "$port" "$key" "the key made with the bootstrap root key"
  say "  bootstrap root key from /data: API $api, a key that verifies"

  workspace=$(pm exec "$a" keyhold workspaces list --json | json workspaces.0.workspaceId)
  cli_root=$(pm exec "$a" keyhold root-keys create --workspace "$workspace" --permission "api.$api.create_key" \
    --permission "api.$api.read_api" --name image-check --json | json rootKey)
  [[ "$cli_root" == kh_root_* ]] || fail "keyhold root-keys create (exec) printed no root key"
  [ "$(status_of "$port" "/v1/apis.getApi?apiId=$api" "$cli_root")" = 200 ] || fail "the CLI's root key cannot read the API"
  cli_key=$(post "$port" /v1/keys.createKey "$cli_root" "{\"apiId\":\"$api\"}" | json key)
  [ -n "$cli_key" ] || fail "the CLI's root key did not create a key"
  expect_valid "$port" "$cli_key" "the key made with the CLI's root key"
  say "  keyhold root-keys create (exec): a root key that works"

  uid=$(pm exec "$a" awk '/^Uid:/ { print $2 }' /proc/1/status)
  [ -n "$uid" ] && [ "$uid" != 0 ] || fail "PID 1 runs as uid '$uid' (non-root expected)"
  [ "$(pm exec "$a" id -u)" != 0 ] || fail "exec runs as root"
  say "  PID 1 runs as uid $uid ($(pm exec "$a" id -un))"
  if [ "$label" = read-only ]; then
    [ "$(pm inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$a")" = true ] || fail "$a: the root filesystem is not read-only"
    pm exec --user root "$a" touch /.w 2>/dev/null && fail "$a: the root filesystem is writable"
    say "  root filesystem read-only, /tmp a tmpfs"
  fi

  # podman runs a HEALTHCHECK on a timer where systemd is there; this runs it at once, as the timer would.
  pm healthcheck run "$a" >/dev/null || fail "$a: the HEALTHCHECK failed"
  health=$(pm inspect --format '{{.State.Health.Status}}' "$a")
  [ "$health" = healthy ] || fail "$a: health status '$health' (healthy expected)"
  say "  health status: $health"

  stop "$a"

  port=$(free_port)
  start "$b" "$port" "$volume" "$@"
  expect_valid "$port" "$key" "after a new container on the same volume, the first key"
  expect_valid "$port" "$cli_key" "after a new container on the same volume, the second key"
  [ "$(status_of "$port" "/v1/apis.getApi?apiId=$api" "$root")" = 200 ] || fail "the bootstrap root key no longer works in $b"
  [ "$(status_of "$port" "/v1/apis.getApi?apiId=$api" "$cli_root")" = 200 ] || fail "the CLI's root key no longer works in $b"
  say "  $b on the same volume: both keys verify, both root keys work"

  # A request in flight when SIGTERM arrives is answered: a createKey whose body (padded with 300 KB of
  # whitespace, valid JSON) takes about 3 s to upload.
  {
    printf '{"apiId":"%s","name":"in-flight"' "$api"
    head -c 300000 /dev/zero | tr '\0' ' '
    printf '}'
  } >"$WORK/slow-body.json"
  curl -sS --limit-rate 100K -o "$WORK/in-flight.out" -w '%{http_code}' -X POST "http://127.0.0.1:$port/v1/keys.createKey" \
    -H "Authorization: Bearer $root" -H 'Content-Type: application/json' --data-binary "@$WORK/slow-body.json" \
    >"$WORK/in-flight.status" 2>&1 &
  local in_flight=$!
  sleep 1
  stop "$b"
  wait "$in_flight" || true
  [ "$(cat "$WORK/in-flight.status")" = 200 ] && [ -n "$(json key <"$WORK/in-flight.out")" ] ||
    fail "a request in flight at SIGTERM was not answered: $(cat "$WORK/in-flight.status") $(cat "$WORK/in-flight.out")"
  say "  a createKey in flight at SIGTERM was answered (200, a key)"
}

# `stop_during_start`: as PID 1, Node has no default action for SIGTERM; the server's start handles it (exit 143,
# or 0 when it was already listening), so `podman stop` during a start takes no SIGKILL.
stop_during_start() {
  local volume="keyhold-ci-$RUN_ID-early" name="keyhold-ci-$RUN_ID-early" t0 ms code
  VOLUMES+=("$volume")
  CONTAINERS+=("$name")
  pm volume create "$volume" >/dev/null
  pm run -d --name "$name" --network host -e PORT="$(free_port)" -v "$volume:/data" "$IMAGE" >/dev/null 2>"$WORK/run.err" ||
    { cat "$WORK/run.err" >&2; fail "podman run $name failed"; }
  sleep 0.5
  t0=$(date +%s%N)
  pm stop -t 10 "$name" >/dev/null 2>"$WORK/stop.err" || { cat "$WORK/stop.err" >&2; fail "podman stop $name failed"; }
  ms=$((($(date +%s%N) - t0) / 1000000))
  code=$(pm inspect --format '{{.State.ExitCode}}' "$name")
  [ "$code" = 143 ] || [ "$code" = 0 ] || { pm logs "$name" >&2; fail "$name: exit code $code after SIGTERM during the start (143 or 0 expected)"; }
  [ "$ms" -le $((MAX_STOP_SECONDS * 1000)) ] || fail "$name: SIGTERM during the start took $ms ms to stop it"
  say "SIGTERM during the start: exit $code in $ms ms"
}

# `round_postgres`: the server on PostgreSQL (a schema of its own, dropped on exit) and Redis, through their
# environment variables, with the bootstrap root key given in KEYHOLD_BOOTSTRAP_ROOT_KEY; when CI's
# KEYHOLD_TEST_POSTGRES_URL is set (KEYHOLD_TEST_REDIS_URL too, when set).
round_postgres() {
  if [ -z "${KEYHOLD_TEST_POSTGRES_URL:-}" ]; then
    say "KEYHOLD_TEST_POSTGRES_URL is unset: no PostgreSQL round"
    return
  fi
  local volume="keyhold-ci-$RUN_ID-pg" a="keyhold-ci-$RUN_ID-pg-a" port root url api key ready redis=()
  local sep='?'
  [[ "$KEYHOLD_TEST_POSTGRES_URL" == *\?* ]] && sep='&'
  PG_SCHEMA="keyhold_image_${RUN_ID//-/_}"
  url="$KEYHOLD_TEST_POSTGRES_URL${sep}schema=$PG_SCHEMA"
  [ -n "${KEYHOLD_TEST_REDIS_URL:-}" ] && redis=(-e REDIS_URL="$KEYHOLD_TEST_REDIS_URL")
  root=$(node -e 'const a = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"; let k = "kh_root_"; for (let i = 0; i < 30; i++) k += a[require("node:crypto").randomInt(58)]; console.log(k)')
  say "round 'postgres' (DATABASE_URL schema $PG_SCHEMA${redis:+, REDIS_URL}, KEYHOLD_BOOTSTRAP_ROOT_KEY)"
  VOLUMES+=("$volume")
  pm volume create "$volume" >/dev/null
  port=$(free_port)
  start "$a" "$port" "$volume" -e DATABASE_URL="$url" "${redis[@]}" -e KEYHOLD_BOOTSTRAP_ROOT_KEY="$root"
  ready=$(curl -sS "http://127.0.0.1:$port/v1/readiness")
  [ "$(json checks.store <<<"$ready")" = up ] || fail "$a: readiness $ready"
  [ ${#redis[@]} -eq 0 ] || [ "$(json checks.redis <<<"$ready")" = up ] || fail "$a: readiness $ready (Redis up expected)"
  say "  $a: /v1/readiness $ready"
  pm exec "$a" test ! -e /data/bootstrap-root-key || fail "$a: a bootstrap key file was written although the key was given"
  api=$(post "$port" /v1/apis.createApi "$root" '{"name":"image-check"}' | json apiId)
  key=$(post "$port" /v1/keys.createKey "$root" "{\"apiId\":\"$api\"}" | json key)
  [ -n "$key" ] || fail "the root key given in KEYHOLD_BOOTSTRAP_ROOT_KEY did not create an API and a key"
  expect_valid "$port" "$key" "the key made on PostgreSQL"
  pm exec "$a" keyhold root-keys list --workspace "$(pm exec "$a" keyhold workspaces list --json | json workspaces.0.workspaceId)" --json |
    grep >/dev/null rootKeyId || fail "keyhold (exec) does not see the PostgreSQL database"
  say "  KEYHOLD_BOOTSTRAP_ROOT_KEY works (no file written); an API, a key that verifies; the CLI on the same database"
  pm healthcheck run "$a" >/dev/null || fail "$a: the HEALTHCHECK failed"
  stop "$a"
}

# --- Build -------------------------------------------------------------------------------------------------
t=$SECONDS
ensure_base_image
say "base image $BASE ready ($((SECONDS - t)) s)"

# A registry behind a TLS-intercepting proxy needs the host's CA bundle: lent to the build stage at a path of its
# own (mounted over the image's bundle it would break Debian's ca-certificates), never copied into the image.
ca=()
if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f "$NODE_EXTRA_CA_CERTS" ]; then
  ca=(-v "$NODE_EXTRA_CA_CERTS:/run/host-ca.crt:ro" --build-arg NODE_EXTRA_CA_CERTS=/run/host-ca.crt)
fi
t=$SECONDS
say "podman build -t $IMAGE"
# --format docker: the OCI format has no HEALTHCHECK.
pm build --pull=never --format docker --network host "${ca[@]}" -t "$IMAGE" . >"$WORK/build.log" 2>&1 ||
  { tail -40 "$WORK/build.log" >&2; fail "podman build failed"; }
BUILD_SECONDS=$((SECONDS - t))
say "built in $BUILD_SECONDS s"

# --- The image itself --------------------------------------------------------------------------------------
[ -n "$(pm image inspect --format '{{.Config.Healthcheck}}' "$IMAGE")" ] || fail "the image has no HEALTHCHECK"
pm image inspect --format '{{.Config.Env}}' "$IMAGE" | grep >/dev/null NODE_EXTRA_CA_CERTS && fail "the image's environment names NODE_EXTRA_CA_CERTS"
devdeps=$(pm run --rm --network host --no-healthcheck --entrypoint sh "$IMAGE" -c \
  'find /app/node_modules -maxdepth 3 \( -name typescript -o -name playwright-core -o -name @biomejs \) -print; command -v npm; ls -d /app/test /root/.npm 2>/dev/null; true')
[ -z "$devdeps" ] || fail "the image holds what it should not: $devdeps"
say "no typescript, playwright-core, @biomejs, npm or tests in the image"

# The host's CA bundle minus Debian's own certificates is what a proxy added: none of it may be in the image.
if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f "$NODE_EXTRA_CA_CERTS" ]; then
  awk '/BEGIN CERTIFICATE/ { n++; l = 0 } { l++ } l == 4 { print }' "$NODE_EXTRA_CA_CERTS" | sort -u >"$WORK/host-ca-lines"
  cat /usr/share/ca-certificates/mozilla/*.crt 2>/dev/null | sort -u >"$WORK/debian-ca-lines" || true
  comm -23 "$WORK/host-ca-lines" "$WORK/debian-ca-lines" >"$WORK/proxy-ca-lines"
  CONTAINERS+=("keyhold-ci-$RUN_ID-export")
  pm create --no-healthcheck --name "keyhold-ci-$RUN_ID-export" "$IMAGE" >/dev/null
  found=$(pm export "keyhold-ci-$RUN_ID-export" | grep -acF -f "$WORK/proxy-ca-lines" || true)
  [ "$found" = 0 ] || fail "the image holds a certificate of the host's CA bundle that Debian does not ship ($found lines)"
  say "none of the host's $(wc -l <"$WORK/proxy-ca-lines") added CA certificate(s) in the image"
fi

# --- Running it --------------------------------------------------------------------------------------------
t=$SECONDS
round volume
round read-only --read-only --read-only-tmpfs=false --tmpfs /tmp
stop_during_start
round_postgres
CHECK_SECONDS=$((SECONDS - t))

bytes=$(pm image inspect --format '{{.Size}}' "$IMAGE")
mb=$((bytes / 1000000))
say "image size: $mb MB ($bytes bytes; at most $MAX_IMAGE_MB MB)"
[ "$mb" -le "$MAX_IMAGE_MB" ] || fail "the image is $mb MB (at most $MAX_IMAGE_MB MB)"
say "passed: build $BUILD_SECONDS s, checks $CHECK_SECONDS s, total $((SECONDS - STARTED)) s"
