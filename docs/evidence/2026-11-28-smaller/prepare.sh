#!/usr/bin/env bash
# The recorded folders behave.sh reads, extracted from this repository's evidence.
#
#   docs/evidence/2026-11-28-smaller/prepare.sh      (from the repository root)
#
# Needs: tar. Writes DATA (default: behave-data/), its folders emptied first.
set -eu
D=${DATA:-behave-data} E=docs/evidence
rm -rf "$D/2026-11-27-answer-first" "$D/2026-11-26-h200" "$D/abrows" "$D/2026-11-28-epyc-b"
mkdir -p "$D/2026-11-27-answer-first" "$D/2026-11-26-h200" "$D/abrows" "$D/2026-11-28-epyc-b"
tar -xzf $E/2026-11-27-answer-first/results.tgz -C "$D/2026-11-27-answer-first"
tar -xzf $E/2026-11-26-h200/results.tgz -C "$D/2026-11-26-h200"
tar -xzf $E/2026-11-27-bisect/ab-rows.tgz -C "$D/abrows"
tar -xzf $E/2026-11-28-machines/epyc-b.tgz -C "$D/2026-11-28-epyc-b"
