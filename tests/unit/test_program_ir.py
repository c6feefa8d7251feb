"""The IR: Program.ops() walks nested blocks, str(program) is readable, JSON round-trips, written names are unique."""
import json
import re

import numpy as np
import pytest

import runtime as rt
from runtime import tracing
from runtime.executor import forget_plans
from runtime.naming import UniqueNames, value_names
from runtime.printer import program_to_dot
from runtime.serialization import ProgramFormatError, program_from_json, program_to_json

SPEC = rt.InputSpec([None, 3], "float32", name="x")
X = np.arange(6, dtype=np.float32).reshape(2, 3)


def nested(x):
    """A while whose body holds a cond whose true branch holds a while, plus a tensor array and a parameter."""
    w = rt.tensor(np.array([0.5, 1.0, 2.0], np.float32))

    def outer_body(i, acc, arr):
        def true_branch():
            return rt.while_loop(lambda j, a: j < i, lambda j, a: (j + 1, a + w), (0, acc))[1]
        acc = rt.cond(acc.sum() > 0, true_branch, lambda: acc - 1.0)
        return i + 1, acc, rt.array_append(arr, acc.sum())

    i, acc, arr = rt.while_loop(lambda i, acc, arr: i < rt.dim(x, 0) + 1, outer_body,
                                (0, x, rt.array_new((), "float32")))
    return {"i": i, "acc": acc, "sums": rt.stack(arr), "flipped": acc[:, ::-1][None, ..., 0], "label": "done"}


def nested_oracle(x):
    w = np.array([0.5, 1.0, 2.0], np.float32)
    i, acc, sums = 0, x.copy(), []
    while i < x.shape[0] + 1:
        if acc.sum() > 0:
            for _ in range(i):
                acc = acc + w
        else:
            acc = acc - 1.0
        sums.append(acc.sum())
        i += 1
    return {"i": np.int64(i), "acc": acc, "sums": np.array(sums, np.float32),
            "flipped": acc[:, ::-1][None, ..., 0]}


def walk(program, block=None):
    """Every op, found by following sub-block attrs from the global block (an independent walk)."""
    block = block or program.global_block
    for op in block.ops:
        yield op
        for sub in op.sub_blocks():
            yield from walk(program, sub)


@pytest.fixture(scope="module")
def program():
    prog, _, _ = rt.trace(nested, [SPEC])
    return prog


def run(prog, feed):
    return [t.numpy() for t in rt.Executor().run(prog, feed)]


def test_ops_includes_nested_ops(program):
    ops = list(program.ops())
    assert len(ops) == len({id(op) for op in ops})                  # no op twice
    assert {id(op) for op in ops} == {id(op) for op in walk(program)}
    types = [op.type for op in ops]
    assert types.count("while") == 2 and types.count("cond") == 1
    assert {"array_append", "array_stack", "getitem", "sum"} <= set(types)
    assert len(program.blocks) == 7                                 # global + 2 per while + 2 for the cond
    assert all(isinstance(op.type, str) for op in ops)


def test_sub_blocks_and_parents(program):
    for op in program.ops():
        for sub in op.sub_blocks():
            assert sub.parent is op.block
            assert op.block.is_ancestor_of(sub) and not sub.is_ancestor_of(op.block)


def test_written_names_are_unique_and_identifiers(program):
    names = value_names(program)
    written = [names[id(v)] for v in program.all_vars()]
    assert len(written) == len(set(written)) == len(names)
    assert all(n.replace(".", "_").isidentifier() for n in written)
    for op in program.ops():
        for v in op.outputs:
            assert program.find_var(names[id(v)]) is v


def test_unique_names_never_repeat():
    names = UniqueNames()
    claimed = [names.claim(h) for h in ["x", "x", "x_1", "x", "1bad", "a b", "", "x_2"]]
    assert len(claimed) == len(set(claimed))
    assert claimed[:2] == ["x", "x_1"]
    assert all(n.isidentifier() for n in claimed)


def test_a_name_is_a_hint_made_unique_when_written(tmp_path):
    """Values share hints freely (no table in the Program); the text, the file and the plan name them apart."""
    program = rt.Program("p")
    block = program.global_block
    x, y = block.create_var("x", (3,)), block.create_var("x", (3,))
    program.inputs = [x, y]          # inputs are the exception: feeds find them by name
    s, t = block.create_var("x", (3,)), block.create_var("x", (3,))
    block.append_op("add", [x, 1.0], [s])
    block.append_op("multiply", [s, y], [t])
    program.outputs = [t]
    assert x.name == y.name == s.name == t.name == "x"
    with pytest.raises(ProgramFormatError, match="both named 'x'"):
        rt.verify(program)
    y.name = "y"
    rt.verify(program)
    assert str(program).splitlines()[1:] == ["  x_1: float32[3] = add(x, 1.0)",
                                             "  x_2: float32[3] = multiply(x_1, y)", "  return (x_2)"]
    loaded = program_from_json(program_to_json(program))
    assert str(loaded) == str(program)
    a, b = np.arange(3, dtype=np.float32), np.ones(3, np.float32) * 2
    (out,) = rt.Executor().run(program, {"x": a, "y": b})
    np.testing.assert_array_equal(out.numpy(), (a + 1) * b)


def test_output_tree_and_constants(program):
    assert program.output_tree.num_leaves == 5
    assert program.output_consts == {4: "done"}     # a returned Python constant is not an output Variable
    assert len(program.outputs) == 4


def test_results_match_oracle(program):
    w = program.inputs[1]
    assert w.persistable and w.name in program.parameters
    for x in (X, -X, np.ones((4, 3), np.float32)):
        expected = nested_oracle(x)
        got = run(program, {"x": x})
        for g, key in zip(got, ("i", "acc", "sums", "flipped")):
            np.testing.assert_allclose(g, expected[key], rtol=1e-6)
            assert g.dtype == expected[key].dtype


# --- text ---------------------------------------------------------------------------------------

def test_str_of_simple_program_exact():
    def fn(x):
        s = x.sum()
        return rt.cond(s > 0, lambda: x * 2.0, lambda: -x)

    prog, _, _ = rt.trace(fn, [SPEC])
    assert str(prog) == (
        "program fn(x: float32[?, 3]):\n"
        "  sum: float32[] = sum(x, axis=None, keepdims=False)\n"
        "  greater: bool[] = greater(sum, 0)\n"
        "  cond: float32[?, 3] = cond(greater, x)\n"
        "    true block 1() closure(x.in = x):\n"
        "      multiply: float32[?, 3] = multiply(x.in, 2.0)\n"
        "      yield (multiply)\n"
        "    false block 2() closure(x.in_1 = x):\n"
        "      negative: float32[?, 3] = negative(x.in_1)\n"
        "      yield (negative)\n"
        "  return (cond)"
    )


def test_str_indents_sub_blocks_under_their_op(program):
    text = str(program)
    lines = text.splitlines()
    assert lines[0].startswith("program nested(x: float32[?, 3], ")
    assert "persistable" in lines[0]
    assert lines[-1].startswith("  return (")

    def indent(line):
        return len(line) - len(line.lstrip())

    outer = next(i for i, line in enumerate(lines) if "= while(" in line and indent(line) == 2)
    assert lines[outer + 1].strip().startswith("cond block") and indent(lines[outer + 1]) == 4
    inner = next(i for i, line in enumerate(lines) if "= while(" in line and indent(line) > 2)
    cond_line = next(i for i, line in enumerate(lines) if "= cond(" in line)
    assert indent(lines[cond_line]) == 6 and indent(lines[inner]) == 10
    assert "body block" in text and "true block" in text and "false block" in text
    assert "yield (" in text
    assert "array<float32[]>" in text
    for op in program.ops():                      # every op appears once, by its type
        assert f"{op.type}(" in text


def test_dot_draws_region_ops_as_diamonds_with_their_blocks_as_clusters(program):
    dot = program_to_dot(program)
    assert dot.startswith('digraph "nested" {') and dot.rstrip().endswith("}")
    regions = [op for op in program.ops() if op.sub_blocks()]
    assert dot.count('shape="diamond"') == len(regions) == 3        # while, cond, while: none named here
    assert dot.count("subgraph cluster_b") == sum(len(op.sub_blocks()) for op in regions)
    assert 'label="while body block' in dot and 'label="cond true block' in dot
    assert dot.count('shape="doublecircle"') == 1 and '[label="x\\nfloat32[?, 3]"' in dot


def test_variable_and_operator_repr():
    prog, (x,), out = rt.trace(lambda v: v.sum(axis=1), [SPEC])
    assert repr(x) == "Tracer(x: float32[?, 3])" and repr(prog.inputs[0]) == "Variable(x: float32[?, 3])"
    assert x.type_str() == "float32[?, 3]"
    op = next(prog.ops())
    assert "sum(x, axis=1, keepdims=False)" in repr(op)


# --- JSON -------------------------------------------------------------------------------------

def test_json_round_trip_equal(program):
    text = program.to_json()
    data = json.loads(text)
    assert data["format"] == "dy2static.program" and isinstance(data["version"], int)
    loaded = rt.Program.from_json(text)
    assert loaded == program
    assert loaded.to_json() == text
    assert str(loaded) == str(program)
    assert [op.type for op in loaded.ops()] == [op.type for op in program.ops()]


def test_loaded_program_runs_the_same(program):
    loaded = rt.Program.from_json(program.to_json())
    w = program.parameters[program.inputs[1].name]
    for x in (X, -X):
        feed = {"x": x, program.inputs[1].name: w}
        for a, b in zip(run(program, {"x": x}), run(loaded, feed)):
            np.testing.assert_array_equal(a, b)
            assert a.dtype == b.dtype


def test_round_trip_keeps_literals_and_special_floats():
    def fn(x):
        return (x * float("inf")).clip(-1e30, None), x + (1 + 2j), x > -float("inf"), x ** True

    prog, _, _ = rt.trace(fn, [SPEC])
    loaded = rt.Program.from_json(prog.to_json())
    assert loaded == prog
    for a, b in zip(run(prog, {"x": X + 1}), run(loaded, {"x": X + 1})):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype


def test_programs_differ_when_ops_differ():
    p1, _, _ = rt.trace(lambda x: x + 1.0, [SPEC])
    p2, _, _ = rt.trace(lambda x: x + 2.0, [SPEC])
    assert p1 != p2
    assert p1 != "not a program"


def test_from_json_rejects_malformed_text():
    with pytest.raises(rt.ProgramFormatError):
        rt.Program.from_json("{not json")
    prog, _, _ = rt.trace(lambda x: x + 1.0, [SPEC])
    data = json.loads(prog.to_json())
    data["blocks"][0]["ops"][0]["type"] = "os.system"
    with pytest.raises(rt.ProgramFormatError, match="unknown op type"):
        rt.Program.from_json(json.dumps(data))


# --- plans are keyed by the Program object (no version stamp) -------------------------------------

def test_plans_are_keyed_by_the_program_object():
    prog, _, out = rt.trace(lambda x: x + 1.0, [SPEC])
    assert not hasattr(prog, "version")
    executor = rt.Executor()
    plan = executor.compile(prog)
    assert executor.compile(prog) is plan
    edited = prog.clone()                       # edit a copy, not a Program that ran
    assert executor.compile(edited) is not plan
    with tracing.block_guard(edited.global_block):
        # a new outputs list: its plan is compiled afresh (a traced value is the Tracer of a Variable)
        edited.outputs = [(tracing.tracer_of(edited.outputs[0]) * 2.0).value]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(executor.run(edited, {"x": x})[0].numpy(), (x + 1) * 2)
    np.testing.assert_array_equal(executor.run(prog, {"x": x})[0].numpy(), x + 1)
    forget_plans(prog)
    assert executor.compile(prog) is not plan


def test_shapes_are_spelled_one_way():
    """`[2, ?, 3]` in str(program), in errors of every layer, and in retrace reasons (runtime.shape_text)."""
    from runtime.shape_text import shape_text
    assert [shape_text(s) for s in [(), (3,), (-1, 3), [2, -1, 3]]] == ["[]", "[3]", "[?, 3]", "[2, ?, 3]"]
    program, _, _ = rt.trace(lambda x: x * 2.0, [SPEC])
    assert "x: float32[?, 3]" in str(program)
    with pytest.raises(ValueError, match=re.escape("shapes [?, 3] and [4] cannot be broadcast together")):
        rt.trace(lambda x: x + rt.ones(4), [SPEC])
    with pytest.raises(TypeError, match=re.escape("cannot iterate a tensor of shape [?, 3]")):
        rt.trace(lambda x: list(x), [SPEC])


# --- closed blocks: what a block reads from outside is declared at its op ------------------------

def _branch_reading(x, w):
    return rt.cond(rt.sum(x) > 0, lambda: rt.tanh(x @ w), lambda: x * 2.0)


def test_blocks_are_closed_every_outside_read_is_a_closure_param():
    """Each branch reads x and w through closure params fed by the op's inputs, never by the outer name."""
    prog, _, _ = rt.trace(_branch_reading, [rt.InputSpec([2, 3]), rt.InputSpec([3, 3])])
    x, w = prog.inputs
    op = next(op for op in prog.ops() if op.sub_blocks())
    assert op.inputs[1:] == [x, w]                  # x read first (by both branches), then w
    for block in op.sub_blocks():
        assert len(block.closure) == 2 and all(p.block is block for p in block.closure)
        read = {id(v) for inner in block.ops for v in inner.input_vars()}
        assert id(x) not in read and id(w) not in read
    true_block, false_block = op.sub_blocks()
    assert true_block.ops[0].inputs == true_block.closure     # matmul(x_1, w_1)
    assert "closure(" in str(prog)


def test_verify_rejects_an_open_block():
    """A block that reads an outer value by name (not through a closure param) is refused, naming both."""
    prog, _, _ = rt.trace(_branch_reading, [rt.InputSpec([2, 3]), rt.InputSpec([3, 3])])
    rt.verify(prog)
    broken = prog.clone()
    op = next(op for op in broken.ops() if op.sub_blocks())
    w = broken.inputs[1]
    true_block = op.sub_blocks()[0]
    matmul = true_block.ops[0]
    true_block.ops[0] = matmul.replace(inputs=[matmul.inputs[0], w])      # w by its outer name
    with pytest.raises(rt.ProgramFormatError, match=rf"block 1 reads '{w.name}' of block 0: a block reads only its "
                                                    "params, its closure params and values defined earlier in it"):
        rt.verify(broken)


def test_verify_rejects_a_closure_param_without_its_input():
    prog, _, _ = rt.trace(_branch_reading, [rt.InputSpec([2, 3]), rt.InputSpec([3, 3])])
    broken = prog.clone()
    op = next(op for op in broken.ops() if op.sub_blocks())
    at = broken.global_block.ops.index(op)
    broken.global_block.ops[at] = op.replace(inputs=op.inputs[:-1])
    with pytest.raises(rt.ProgramFormatError, match=r"op \d \('cond', made at '.*test_program_ir.py:\d+'\) of "
                                                    r"block 0: block 'true_block' has 2 closure params for 1 "
                                                    "closure inputs"):
        rt.verify(broken)


def test_verify_rejects_a_block_reading_its_sibling_blocks_value():
    prog, _, _ = rt.trace(_branch_reading, [rt.InputSpec([2, 3]), rt.InputSpec([3, 3])])
    broken = prog.clone()
    op = next(op for op in broken.ops() if op.sub_blocks())
    true_block, false_block = op.sub_blocks()
    made_in_true = true_block.ops[0].outputs[0]
    false_block.ops[0].inputs[0] = made_in_true     # the false branch reads what only the true one computes
    with pytest.raises(rt.ProgramFormatError, match=rf"block 2 uses variable '{made_in_true.name}' of block 1, "
                                                    "which does not enclose it"):
        rt.verify(broken)


def test_a_block_held_by_an_op_built_directly_is_listed_once():
    """`new_block` then an Operator spliced in without `append_op` (a rewrite that replaces an op): the
    block is the op's, listed once where the op holds it, and the Program still saves and loads."""
    prog, _, _ = rt.trace(_branch_reading, [rt.InputSpec([2, 3]), rt.InputSpec([3, 3])])
    op = next(op for op in prog.ops() if op.sub_blocks())
    true_block, false_block = op.sub_blocks()
    copy = prog.new_block(op.block)
    copy.closure = [copy.create_var(v.name, v.static_shape, v.dtype) for v in op.inputs[1:]]
    copy.results = [copy.closure[0]]            # the true branch now yields x as it is
    block = op.block
    block.ops[block.ops.index(op)] = op.replace(attrs=dict(op.attrs, true_block=copy))
    assert prog.blocks == [prog.global_block, copy, false_block]
    rt.verify(prog)
    loaded = rt.Program.from_json(prog.to_json())
    assert str(loaded) == str(prog) and len(loaded.blocks) == 3


def test_a_rollback_frees_the_names_of_the_captures_it_drops():
    """Captured tensors are inputs, found by name: a discarded attempt's capture gives its name back."""
    a, b = rt.tensor(np.ones(2, np.float32)), rt.tensor(np.full(2, 2.0, np.float32))

    def f(x):
        point = tracing.checkpoint(tracing.current_block())
        x + a                           # captures a as `const`
        tracing.rollback(point)
        return x + b                    # b is captured under the name a gave back

    program, _, _ = rt.trace(f, [rt.InputSpec([2], "float32", "x")])
    assert [v.name for v in program.inputs] == ["x", "const"]
    assert program.parameters["const"] is b
    (out,) = rt.Executor().run(program, {"x": np.zeros(2, np.float32)})
    np.testing.assert_array_equal(out.numpy(), [2.0, 2.0])
