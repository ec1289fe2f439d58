"""The garbage collector paused while a test builds many objects, none of them garbage."""
from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def paused():
    """Collection passes are triggered by the number of objects made and each rescans the young
    ones: building a large syntax tree or document under them costs two or three times the build
    itself. Objects left in cycles meanwhile are collected once the block ends."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
