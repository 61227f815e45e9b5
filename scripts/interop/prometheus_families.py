"""The metric families of a Prometheus text exposition on stdin, as read by
prometheus_client's parser, printed as JSON (see scripts/prometheus-parse.sh)."""

import json
import math
import sys

from prometheus_client.parser import text_string_to_metric_families


def number(value):
    """A finite value as a JSON number, any other as its exposition text."""
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")


def main():
    families = [
        {
            "name": family.name,
            "type": family.type,
            "help": family.documentation,
            "samples": [
                {"name": s.name, "labels": s.labels, "value": number(s.value)}
                for s in family.samples
            ],
        }
        for family in text_string_to_metric_families(sys.stdin.read())
    ]
    json.dump(families, sys.stdout)


if __name__ == "__main__":
    main()
