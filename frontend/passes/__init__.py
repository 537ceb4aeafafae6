"""Graph passes over fxla GraphModules, after ``torch.fx.passes``.

* :func:`replace_pattern` -- subgraph rewriting (pattern / replacement functions);
* :func:`split_module` -- partition a graph into ``submod_<id>`` GraphModules;
* :func:`fuse_conv_bn` -- fold eval-mode BatchNorm2d into the preceding Conv2d;
* :func:`functionalize` -- rewrite in-place tensor mutation out of place;
* :func:`prepare_graph` -- shape propagation + functionalization: the graph the lowering stage takes;
* :func:`graph_to_dot` / :func:`graph_to_svg` -- Graphviz rendering.

Passes raise :class:`fxla.frontend.PassError` when they cannot be applied.
"""
from .functionalize import functionalize
from .fuse import fuse_conv_bn, fuse_conv_bn_weights
from .graph_drawer import graph_to_dot, graph_to_svg
from .matcher import InternalMatch, SubgraphMatcher
from .prepare import PreparedGraph, prepare_graph
from .split_module import split_module
from .subgraph_rewriter import Match, replace_pattern

__all__ = ["replace_pattern", "Match", "SubgraphMatcher", "InternalMatch", "split_module", "fuse_conv_bn",
           "fuse_conv_bn_weights", "functionalize", "prepare_graph", "PreparedGraph", "graph_to_dot", "graph_to_svg"]
