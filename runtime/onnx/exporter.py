"""Program -> ONNX ModelProto.

Walks the Program's blocks in order and calls each op's registered lowering
(`OpDef.onnx`); `cond`/`while` lowerings build If branches and Loop bodies as
subgraphs through the same builder. Feeds become graph inputs (unknown dims as
named `dim_param`s, `<input>_dim<axis>`), parameters become initializers, the
Program's outputs the graph's outputs in order (an output dim that ONNX shape
inference shows to be an input's dim_param is named so too). onnx is imported here, lazily:
the rest of dy2static never needs it.
"""
import numpy as np

from ..deploy import parameter_arrays
from ..export import ExportError
from ..naming import value_names
from ..ops.registry import get_op
from .builder import GraphBuilder, Names, ValueType
from ..passes import run_passes

MIN_OPSET = 18           # Reduce* take axes as an input, Split takes num_outputs, Bitwise* exist
DEFAULT_OPSET = 18


def import_onnx():
    try:
        import onnx
    except ImportError:
        raise ImportError("ONNX export needs the onnx package: pip install 'dy2static[onnx]' "
                          "(onnx and onnxruntime)") from None
    return onnx


def model_proto(program, opset=None):
    """The ONNX model of `program` (checked by onnx.checker with full_check)."""
    onnx = import_onnx()
    opset = DEFAULT_OPSET if opset is None else int(opset)
    if opset < MIN_OPSET:
        raise ExportError(f"opset {opset} is too old: dy2static's lowerings need opset {MIN_OPSET} or newer")
    program = run_passes(program, ["dce"])        # an unused op needs no ONNX form
    var_names = value_names(program)
    names = Names(var_names.values())
    graph = GraphBuilder(names, lower_op, name=program.name, var_names=var_names)
    initializers = parameter_arrays(program)            # by parameter name: the persistable inputs' names
    initializer_names = {}
    for var in program.inputs:
        name = var_names[id(var)]
        if var.persistable:
            graph.env[id(var)] = initializer_names[var.name] = names.claim(name)
        else:
            graph.add_input(var, ValueType(var.dtype, var.static_shape, dim_params={
                axis: f"{name}_dim{axis}" for axis, d in enumerate(var.static_shape) if d == -1}))
    graph.lower_block(program.global_block)
    graph.op = None
    for var in program.outputs:
        graph.add_output(graph.value(var), var, hint=var_names[id(var)])
    proto = _graph_proto(onnx, graph, initializers={initializer_names[k]: v for k, v in initializers.items()})
    opset_id = onnx.helper.make_opsetid("", opset)
    model = onnx.helper.make_model(proto, opset_imports=[opset_id], producer_name="dy2static",
                                   ir_version=onnx.helper.find_min_ir_version_for([opset_id]))
    _name_output_dims(onnx, model, {name for _, t in graph.inputs for name in t.dim_params.values()})
    onnx.checker.check_model(model, full_check=True)
    return model


def _name_output_dims(onnx, model, dim_params):
    """An output dim the Program leaves unknown takes an input's dim_param where shape inference shows it is one."""
    inferred = onnx.shape_inference.infer_shapes(model).graph.output
    for ours, theirs in zip(model.graph.output, inferred):
        if not (ours.type.HasField("tensor_type") and theirs.type.HasField("tensor_type")):
            continue
        dims, found = ours.type.tensor_type.shape.dim, theirs.type.tensor_type.shape.dim
        if len(dims) != len(found):
            continue
        for dim, seen in zip(dims, found):
            if not dim.HasField("dim_value") and not dim.dim_param and seen.dim_param in dim_params:
                dim.dim_param = seen.dim_param


def lower_op(graph, op):
    """Lower one Operator into `graph` and bind its outputs' values (renamed to the Variables' names)."""
    opdef = get_op(op.type)
    graph.op = op
    if opdef.onnx is None:
        graph.fail("it has no ONNX lowering")
    if opdef.region is not None:       # its blocks' closure params read the values of its closure inputs
        for param, x in opdef.region.closure_pairs(op):
            graph.env[id(param)] = graph.value(x)
    start = len(graph.nodes)
    results = opdef.onnx(graph, op)
    results = [results] if isinstance(results, str) else list(results)
    if len(results) != len(op.outputs):
        raise AssertionError(f"the ONNX lowering of {op.type} made {len(results)} values for {len(op.outputs)} outputs")
    renamed = {}
    for var, value in zip(op.outputs, results):
        if value not in renamed:          # one value for two outputs keeps the first output's name
            renamed[value] = _renamed(graph, start, value, graph.var_name(var))
        graph.env[id(var)] = renamed[value]


def _renamed(graph, start, value, var_name):
    """Give the value made for a Variable that Variable's name when it is free and nothing else uses the value."""
    new = graph.nodes[start:]
    producers = [n for n in new if value in n.outputs and n.op_type != "Constant"]
    if not producers or var_name in graph.names.taken or any(_reads(n, value) for n in new):
        return value
    name = graph.names.claim(var_name)
    producers[0].outputs[producers[0].outputs.index(value)] = name
    return name


def _reads(node, value):
    if value in node.inputs:
        return True
    return any(_reads(n, value) for sub in node.attrs.values() if isinstance(sub, GraphBuilder) for n in sub.nodes)


# --- protobuf ------------------------------------------------------------------------------

def _graph_proto(onnx, graph, initializers=()):
    helper = onnx.helper
    nodes = [_node_proto(onnx, n) for n in graph.nodes]
    inputs = [_value_info(onnx, name, t) for name, t in graph.inputs]
    outputs = [_value_info(onnx, name, t) for name, t in graph.outputs]
    inits = [onnx.numpy_helper.from_array(np.asarray(a, order="C"), name) for name, a in dict(initializers).items()]
    return helper.make_graph(nodes, graph.name, inputs, outputs, initializer=inits)


def _node_proto(onnx, node):
    attrs = {k: _attr(onnx, v) for k, v in node.attrs.items()}
    return onnx.helper.make_node(node.op_type, node.inputs, node.outputs, **attrs)


def _attr(onnx, value):
    if isinstance(value, GraphBuilder):
        return _graph_proto(onnx, value)
    if isinstance(value, np.dtype):
        return onnx.helper.np_dtype_to_tensor_dtype(value)
    if isinstance(value, np.ndarray):
        return onnx.numpy_helper.from_array(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def _value_info(onnx, name, value_type):
    helper = onnx.helper
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(value_type.dtype))
    shape = [value_type.dim_params.get(axis) if d == -1 else d for axis, d in enumerate(value_type.shape)]
    if value_type.sequence:
        return helper.make_tensor_sequence_value_info(name, elem, shape)
    return helper.make_tensor_value_info(name, elem, shape)



