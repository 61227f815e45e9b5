#!/usr/bin/env bash
# Read a Prometheus text exposition on stdin with the reference parser, the
# Python client's (PyPI `prometheus-client`, 0.26.0,
# `prometheus_client.parser.text_string_to_metric_families`), and print the
# metric families it found as one JSON array on stdout:
#   [{"name", "type", "help", "samples": [{"name", "labels", "value"}]}]
# A value that is not finite is printed as a string ("+Inf", "NaN").
# The parser refuses text it cannot read (the script then exits 1), and a
# sample that does not belong to the family its `# TYPE` line named starts
# a family of its own, of type `unknown`.
#
# Usage:
#   curl -s http://127.0.0.1:9090/metrics | scripts/prometheus-parse.sh
#
# Environment:
#   MCP_TASKS_CACHE       cache folder (default: <repo>/.cache, git-ignored);
#                         the parser is installed into a venv there,
#                         prometheus-client-<version>, the first time
#
# Needs python3 with venv, and PyPI the first time.
# Exits 2 on a setup error; otherwise with the parser's status.
set -euo pipefail

VERSION="0.26.0"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${MCP_TASKS_CACHE:-$REPO/.cache}"
VENV="$CACHE/prometheus-client-$VERSION"

# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
help_if_asked "${1:-}"
(($# == 0)) || die "usage: $(basename "$0") < EXPOSITION (see --help)"

python_venv "$VENV" "$CACHE/prometheus-client.lock" "prometheus-client==$VERSION"
exec "$VENV/bin/python" "$REPO/scripts/interop/prometheus_families.py"
