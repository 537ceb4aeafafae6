"""Runtime stage: PJRT devices, compiling verified StableHLO, device buffers and execution.

Only this stage (and :mod:`fxla.dialects.mlir`) imports jax/jaxlib.
"""
from .devices import DeviceError, resolve_device
from .buffers import from_device, to_device
from .executable import CompileError, Executable, compile_stablehlo

__all__ = ["DeviceError", "resolve_device", "to_device", "from_device", "CompileError", "Executable",
           "compile_stablehlo"]
