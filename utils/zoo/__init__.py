"""The model zoo of issue 18: third-party models (Hugging Face transformers, torchvision, timm) and PyTorch
core layers, each built offline from its library's config class with seeded random weights and called the way its
users call it.  ``utils/zoo/run.py`` (``make zoo``) runs every entry through fxla's three routes and writes
docs/zoo.md; tests/test_zoo_fast.py runs one entry per family.

``ENTRIES`` lists them all (building one imports its library only then); ``BY_NAME`` maps names to entries."""
from . import core_models, hf_models, timm_models, vision_models
from .registry import FAMILIES, Case, Entry

ENTRIES = [*hf_models.ENTRIES, *vision_models.ENTRIES, *timm_models.ENTRIES, *core_models.ENTRIES]
BY_NAME = {e.name: e for e in ENTRIES}
assert len(BY_NAME) == len(ENTRIES), "zoo entry names must be unique"

__all__ = ["Case", "Entry", "ENTRIES", "BY_NAME", "FAMILIES"]
