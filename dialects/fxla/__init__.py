"""The ``fxla`` MLIR dialect: a declarative op table (:mod:`.ops`, assembled from one ``ops_<family>.py`` per op
family), its schema (:mod:`.opdef`), type inference (:mod:`.infer`), dtype rules (:mod:`.types`), verifier
(:mod:`.verifier`), textual syntax (:mod:`.syntax`: how fxla prints and reads its ops) and docs (:mod:`.docs`)."""
from . import ops
from .opdef import ANY_ELEM, Attr, AttrKind, InferError, OpDef, Operand, sig_of, type_of
from .ops import ALL_OPS, BY_NAME, FAMILIES
from .syntax import IRSyntaxError, print_module, to_generic
from .types import Sig, promote_pair, result_elem
from .verifier import Diagnostic, VerificationError, verify_fxla, verify_module, verify_op

__all__ = ["ops", "OpDef", "Operand", "Attr", "AttrKind", "InferError", "ANY_ELEM", "sig_of", "type_of",
           "ALL_OPS", "BY_NAME", "FAMILIES", "Sig", "promote_pair", "result_elem", "Diagnostic",
           "VerificationError", "verify_fxla", "verify_module", "verify_op", "IRSyntaxError", "print_module",
           "to_generic"]
