"""The tracer's parts (core, concrete-shapes tracer, state capture) and the typed node/graph metadata."""
import ast
import inspect

import pytest
import torch
from torch import nn

from fxla.frontend import GraphError, Tracer, symbolic_trace
from fxla.frontend import concrete, meta, state_capture, tracer
from fxla.frontend.concrete import ConcreteShapeTracer
from fxla.frontend.meta import AttributeWrite


class Stateful(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("steps", torch.zeros(()))
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        self.last = y
        self.calls = 1
        self.steps += 1
        return y.relu() * x.shape[-1]


def test_concrete_shapes_makes_a_concrete_shape_tracer():
    assert type(Tracer()) is Tracer and not Tracer.concrete_shapes
    assert type(Tracer(concrete_shapes=True)) is ConcreteShapeTracer

    class Mine(Tracer):
        pass
    mine = Mine(concrete_shapes=True)
    assert isinstance(mine, Mine) and isinstance(mine, ConcreteShapeTracer) and type(mine).__name__ == "Mine"
    assert type(Mine(concrete_shapes=True)) is type(mine)
    graph = mine.trace(Stateful(), example_inputs=(torch.randn(2, 4),))
    assert graph.meta[meta.SPECIALIZATION]["inputs"]["x"].shape == (2, 4)


def test_public_names_stay_importable_from_the_tracer():
    assert tracer.final_attribute_writes is state_capture.final_attribute_writes
    assert tracer.AttributeWrite is state_capture.AttributeWrite is AttributeWrite


@pytest.mark.parametrize("example", [None, (torch.randn(2, 4),)])
def test_traced_metadata_has_the_documented_types(example):
    gm = symbolic_trace(Stateful(), example_inputs=example)
    gm.graph.lint()
    assert all(meta.node_meta_problem(n.meta) is None for n in gm.graph.nodes)
    writes = [w for n in gm.graph.nodes for w in n.meta.get(meta.ATTRIBUTE_WRITES, ())]
    assert [w.name for w in writes] == ["last"]
    assert [n.meta[meta.STATE_ASSIGNMENT] for n in gm.graph.nodes if meta.STATE_ASSIGNMENT in n.meta] == ["steps"]
    assert [name for _, name, _ in gm.graph.meta[meta.ATTRIBUTE_CONSTANTS]] == ["calls"]
    assert set(tracer.final_attribute_writes(gm.graph)) == {"last", "calls"}


def test_lint_checks_the_types_of_known_meta_keys():
    gm = symbolic_trace(Stateful())
    node = next(iter(gm.graph.nodes))
    node.meta[meta.SOURCE] = "not a location"
    with pytest.raises(GraphError, match="SourceLocation"):
        gm.graph.lint()
    node.meta[meta.SOURCE] = None
    node.meta["my_own_key"] = object()            # other keys are free-form
    gm.graph.lint()
    node.meta[meta.ATTRIBUTE_WRITES] = ["last"]
    with pytest.raises(GraphError, match="AttributeWrite"):
        gm.graph.lint()
    del node.meta[meta.ATTRIBUTE_WRITES]
    gm.graph.meta[meta.INPUT_MUTATIONS] = {"x": "not a node"}
    with pytest.raises(GraphError, match="graph.meta\\['input_mutations'\\]"):
        gm.graph.lint()


def test_meta_keys_are_listed_in_the_node_and_graph_specs():
    from fxla.frontend import Graph, Node
    node_keys = [meta.SOURCE, meta.TENSOR_META, meta.VALUE, meta.ATTRIBUTE_WRITES, meta.STATE_ASSIGNMENT,
                 meta.FUNCTIONALIZED, meta.GRAD_DISABLED, meta.REPLACES, meta.STATE_READS, meta.CLASS_ASSUMED]
    graph_keys = [meta.SPECIALIZATION, meta.ATTRIBUTE_CONSTANTS, meta.ATTRIBUTE_STARTS, meta.ATTRIBUTE_READS,
                  meta.INPUT_MUTATIONS,
                  meta.STATE_MUTATIONS, meta.VALUE_GUARDS, meta.QUIET_MUTATIONS, meta.GRAD_ENABLED_AT]
    assert set(meta.NodeMeta.__annotations__) == set(node_keys)
    assert set(meta.GraphMeta.__annotations__) == set(graph_keys)
    assert all(f'``"{k}"``' in Node.__doc__ for k in node_keys)
    assert all(f'``"{k}"``' in Graph.__doc__ for k in graph_keys)


def test_tracer_classes_stay_small():
    for module in (tracer, concrete, state_capture):
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            if isinstance(node, ast.ClassDef):
                assert node.end_lineno - node.lineno < 300, (module.__name__, node.name)
            if isinstance(node, ast.FunctionDef) and node.name == "trace":
                assert node.end_lineno - node.lineno < 40
