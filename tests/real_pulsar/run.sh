#!/usr/bin/env bash
# The real Pulsar standalone's classpath and the corpus/ground-truth tool.
#
#   tests/real_pulsar/run.sh build                 resolve + compile (cheap when already built)
#   tests/real_pulsar/run.sh classpath             print the classpath (target/classes:target/lib/*)
#   tests/real_pulsar/run.sh corpus <command> ...  run io.pulsarentries.realpulsar.Corpus
#
# Builds when target/classes, target/lib or target/offloaders is missing, or when pom.xml / src
# changed since the last successful build. Maven output goes to stderr; stdout is the tool's output.
# The first build resolves pulsar-broker's ~330 jars (~240 MiB) into ~/.m2; later builds reuse them.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TARGET="$HERE/target"
STAMP="$TARGET/.real-pulsar-built"

for tool in java mvn; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "run.sh: '$tool' not found on PATH (need Java 17+ and Maven 3.8+)" >&2
        exit 127
    fi
done

needs_build() {
    [[ ! -d "$TARGET/classes" || ! -d "$TARGET/lib" || ! -d "$TARGET/offloaders" || ! -f "$STAMP" ]] && return 0
    [[ -n "$(find "$HERE/pom.xml" "$HERE/src" -newer "$STAMP" -print -quit)" ]]
}

if needs_build; then
    mkdir -p "$TARGET"
    # Serialise concurrent callers (e.g. parallel test workers) around one build.
    exec 9>"$TARGET/.build.lock"
    command -v flock >/dev/null 2>&1 && flock 9
    if needs_build; then
        echo "run.sh: building the real Pulsar classpath (mvn package)..." >&2
        # A stale lib/ would keep jars that a changed pom no longer resolves.
        rm -rf "$TARGET/lib" "$TARGET/offloaders"
        mvn -q -B -f "$HERE/pom.xml" package >&2
        touch "$STAMP"
    fi
    exec 9>&-
fi

case "${1:-}" in
    build) exit 0 ;;
    classpath) echo "$TARGET/classes:$TARGET/lib/*"; exit 0 ;;
    corpus) shift; exec java -Xmx512m ${CORPUS_JAVA_OPTS:-} -Dlog4j2.configurationFile="$HERE/tool-log4j2.xml" -cp "$TARGET/classes:$TARGET/lib/*" io.pulsarentries.realpulsar.Corpus "$@" ;;
    *) echo "usage: run.sh build|classpath|corpus <command> ..." >&2; exit 2 ;;
esac
