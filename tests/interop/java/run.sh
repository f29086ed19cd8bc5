#!/usr/bin/env bash
# Run the Pulsar interop harness, building it first when needed.
#
#   tests/interop/java/run.sh generate            > cases.json
#   echo '["0e01..."]' | tests/interop/java/run.sh parse
#   tests/interop/java/run.sh chunks              > chunked messages + chunk ids
#   echo '[{"op":"parse","bytes":"080a1003"}]' | tests/interop/java/run.sh msgid
#   tests/interop/java/run.sh build               (build only)
#
# Rebuilds when target/classes or target/lib is missing, or when pom.xml / src changed
# since the last successful build. Maven output goes to stderr; stdout is the harness's JSON.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TARGET="$HERE/target"
STAMP="$TARGET/.harness-built"

for tool in java mvn; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "run.sh: '$tool' not found on PATH (need Java 17+ and Maven 3.8+)" >&2
        exit 127
    fi
done

needs_build() {
    [[ ! -d "$TARGET/classes" || ! -d "$TARGET/lib" || ! -f "$STAMP" ]] && return 0
    [[ -n "$(find "$HERE/pom.xml" "$HERE/src" -newer "$STAMP" -print -quit)" ]]
}

if needs_build; then
    mkdir -p "$TARGET"
    # Serialise concurrent callers (e.g. parallel test workers) around one build.
    exec 9>"$TARGET/.build.lock"
    command -v flock >/dev/null 2>&1 && flock 9
    if needs_build; then
        echo "run.sh: building the interop harness (mvn package)..." >&2
        mvn -q -B -f "$HERE/pom.xml" package >&2
        touch "$STAMP"
    fi
    exec 9>&-
fi

[[ "${1:-}" == "build" ]] && exit 0
exec java -cp "$TARGET/classes:$TARGET/lib/*" io.pulsarentries.interop.Harness "$@"
