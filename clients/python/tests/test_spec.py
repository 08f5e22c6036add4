"""Every operation of docs/openapi.yaml has a method on both clients, and the sync client is current."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import yaml

import ebb_client
from ebb_client import errors

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT.parents[1] / "docs" / "openapi.yaml"

# The dashboard's pages are for browsers: the client has no use for them.
BROWSER_ONLY = {"root", "dashboardRedirect", "dashboard"}

METHODS = {"get", "put", "post", "delete", "patch", "head", "options"}


def _snake(op_id: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", op_id).lower()


def _operations() -> list[tuple[str, str, dict]]:
    spec = yaml.safe_load(SPEC.read_text())
    ops = []
    for path, item in spec["paths"].items():
        for method, op in item.items():
            if method in METHODS:
                ops.append((method.upper(), path, op))
    return ops


def test_every_operation_has_a_method():
    ops = _operations()
    assert len(ops) > 30
    missing = []
    for method, path, op in ops:
        op_id = op.get("operationId")
        assert op_id, f"{method} {path} has no operationId"
        if op_id in BROWSER_ONLY:
            assert op.get("tags") == ["dashboard"], op_id
            continue
        name = _snake(op_id)
        sync = getattr(ebb_client.Client, name, None)
        asyn = getattr(ebb_client.AsyncClient, name, None)
        if sync is None or asyn is None or not inspect.iscoroutinefunction(asyn):
            missing.append(f"{method} {path} ({op_id}): {name}")
            continue
        # The method's docstring names its route, so that a reader finds it.
        doc = sync.__doc__ or ""
        assert f"{method} " in doc or name in ("plan_index", "apply_index"), name
    assert not missing, "operations without a client method:\n" + "\n".join(missing)


def test_every_error_code_has_a_class():
    spec = yaml.safe_load(SPEC.read_text())
    codes = set(spec["components"]["schemas"]["ErrorCode"]["enum"])
    assert codes == set(errors.ERRORS)


def test_sync_client_is_generated():
    r = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_sync.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
