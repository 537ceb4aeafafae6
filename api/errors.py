"""The one exception hierarchy of fxla.

Every error fxla raises on bad user input derives from :class:`FxlaError`.  Messages follow one shape::

    <what went wrong>
      at <file>:<line>:<col>
        <source line>
    <why>
    fix: <what to do>

An error keeps those parts as fields -- ``FxlaError(what, where=loc, why=..., fix=...)``, read back as
``err.what``, ``err.where``, ``err.why``, ``err.fix`` -- and renders the text from them, so every stage words
its errors the same way; ``err.add_context(line)`` adds a line before ``fix:``.  :func:`format_message`
renders the same text without an error object.  The code lives in layer 0, :mod:`fxla.base.errors`, which
every stage imports; this module is its public name.
"""
from fxla.base.errors import FxlaError, format_location, format_message, split_message

__all__ = ["FxlaError", "format_message", "format_location", "split_message"]
