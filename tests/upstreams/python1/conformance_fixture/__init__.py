"""The conformance suite's server fixtures on the Python SDK 1.x, behind
`../conformance.py` (its entry point, which lists every tool, prompt and
resource). Importing the package registers all of them on `server`, the
tools in the order `tools/list` shows them:

- `base`: the low-level server and the helpers every part shares
- `registry`: the `@tool` decorator, `tools/list` and `tools/call`
- `asking`: requests to the client (elicitation, sampling, roots)
- `content_tools`: fixed contents, progress and logging
- `elicitation_tools`: the 2025-11-25 asking tools
- `diagnostic_tools`: JSON Schema 2020-12 and 2026-07-28 diagnostics
- `mrtr_tools`: the MRTR scenarios' tools, asking with real requests
- `task_tools`: the tasks extension's tools
- `prompts`, `resources`: prompts; resources and completions
- `transport`: the HTTP app and the stdio session
"""

from . import (  # noqa: F401  (each registers its handlers on `server`)
    content_tools,
    elicitation_tools,
    diagnostic_tools,
    mrtr_tools,
    task_tools,
    prompts,
    resources,
)
from .base import server

__all__ = ["server"]
