"""Helpers shared by the test files."""


def marker_line(path: str, marker: str) -> int:
    """The line number (1-based) of the unique line of ``path`` ending in ``# <marker>``."""
    with open(path) as f:
        hits = [i for i, text in enumerate(f, 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, (marker, hits)
    return hits[0]
