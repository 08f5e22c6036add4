"""Writes src/ebb_client/_sync_client.py from _async_client.py.

The synchronous client is the asynchronous one with the async taken out:
one source, so that the two cannot drift apart. tests/test_generated.py
fails when the generated file is not current.

    python scripts/gen_sync.py          # rewrite the file
    python scripts/gen_sync.py --check  # exit 1 when it is stale
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "src" / "ebb_client"

# Whole-word replacements, in order.
_WORDS = [
    (r"async def ", "def "),
    (r"async for ", "for "),
    (r"async with ", "with "),
    (r"await ", ""),
    (r"\bAsyncIterator\b", "Iterator"),
    (r"Awaitable\[(\w+)\]", r"\1"),
    (r"\bAwaitable, ", ""),
    (r"\bAsyncClient\b", "Client"),
    (r"\b__aenter__\b", "__enter__"),
    (r"\b__aexit__\b", "__exit__"),
    (r"\baclose\b", "close"),
    (r"\basyncio\.sleep\b", "time.sleep"),
    (r"^import asyncio\n", ""),
    (r"for asyncio\b", "that blocks"),
    (r"an async context manager", "a context manager"),
]

_HEADER = '''"""The synchronous client: generated from _async_client.py by scripts/gen_sync.py.

Do not edit: edit _async_client.py and run the script.
"""
'''



def generate() -> str:
    src = (PKG / "_async_client.py").read_text()
    # The module docstring is the async file's own.
    body = src.split('"""', 2)[2].lstrip("\n")
    for pattern, repl in _WORDS:
        body = re.sub(pattern, repl, body, flags=re.MULTILINE)
    return _HEADER + "\n" + body.rstrip("\n") + "\n"


def main() -> int:
    out = PKG / "_sync_client.py"
    text = generate()
    if "--check" in sys.argv[1:]:
        if not out.exists() or out.read_text() != text:
            print(f"{out} is stale: run python scripts/gen_sync.py", file=sys.stderr)
            return 1
        return 0
    out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
