#!/usr/bin/env bash
# The recorded folders behave.sh reads, from this repository's evidence: $1 the repository root.
set -eu
D=/tmp/behave-data; E=$1/docs/evidence
mkdir -p $D/2026-11-27-answer-first $D/2026-11-26-h200 $D/abrows
tar -xzf $E/2026-11-27-answer-first/results.tgz -C $D/2026-11-27-answer-first
tar -xzf $E/2026-11-26-h200/results.tgz -C $D/2026-11-26-h200
tar -xzf $E/2026-11-27-bisect/ab-rows.tgz -C $D/abrows
