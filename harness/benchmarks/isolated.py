"""One measurement in a fresh Python child: RUSAGE_CHILDREN's high-water mark
there is the largest process that one measurement ran, not the largest of any
run before it in the benchmark's own process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def call(module: str, payload: dict[str, Any]) -> Any:
    """module.measure(payload) (a script beside this one), run in a fresh interpreter; its JSON result. A failure
    ends the benchmark with the child's error."""
    code = (f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import {module} as m; "
            "print(json.dumps(m.measure(json.loads(sys.argv[1]))))")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(payload)], capture_output=True, text=True,
                         env=os.environ)
    if out.returncode != 0:
        raise SystemExit(out.stderr.strip()[-800:])
    return json.loads(out.stdout.strip().splitlines()[-1])
