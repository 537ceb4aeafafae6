"""Source locations: where in the user's program a graph node came from.

The code lives in layer 0, :mod:`fxla.base.source` (errors need locations too, and layer 0 imports nothing
of fxla); this module keeps the frontend's name for it.  The tracer stamps every node with
``node.meta['source']``, a :class:`SourceLocation` for the innermost stack frame that belongs to the user's
code -- not to fxla itself, not to torch, and not to the ``contextlib``/``functools`` plumbing between them.
"""
from fxla.base.source import (SourceLocation, internal_dirs, is_internal_file, location_at,  # noqa: F401
                              location_of_code, traceback_location, user_frame, user_frame_location)

__all__ = ["SourceLocation", "user_frame", "user_frame_location", "location_of_code", "location_at",
           "is_internal_file", "traceback_location"]
