"""fxla.frontend: capture PyTorch programs as graphs with an FX-style symbolic tracer.

``symbolic_trace(model)`` returns a :class:`GraphModule` whose ``graph`` (a :class:`Graph`
of :class:`Node` s, every node carrying ``meta['source']``) is what later stages consume.  The known
``node.meta`` / ``graph.meta`` keys are spelled in :mod:`fxla.frontend.meta`.
"""
from .errors import (AutocastError, GraphError, InterpreterError, PassError, SerializationError, SpecializationError,
                     TraceError)
from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter
from .node import Node, map_aggregate, map_arg
from .proxy import Attribute, Proxy
from .shape_prop import ShapeProp, TensorMeta, propagate_shapes
from .source import SourceLocation, user_frame_location
from .serialize import load, save
from .tracer import Tracer, symbolic_trace
from .concrete import ConcreteShapeTracer
from .transformer import Transformer
from .wrap import wrap
from . import passes
from .passes import fuse_conv_bn, graph_to_dot, graph_to_svg, replace_pattern, split_module

__all__ = [
    "Graph", "Node", "Proxy", "Attribute", "Tracer", "ConcreteShapeTracer", "symbolic_trace", "wrap", "GraphModule",
    "Interpreter", "ShapeProp", "TensorMeta", "propagate_shapes", "SourceLocation",
    "user_frame_location", "TraceError", "SpecializationError", "InterpreterError", "GraphError", "AutocastError",
    "map_arg", "map_aggregate",
    "Transformer", "save", "load", "SerializationError", "PassError", "passes", "replace_pattern",
    "split_module", "fuse_conv_bn", "graph_to_dot", "graph_to_svg",
]
