"""Pickling a LoadedProgram, a static function or a to_static Layer: Program JSON + parameters, never code.

The payload names one global, `runtime.deploy.program_from_payload`, and holds
only strings, bytes and numbers; unpickling checks it as `load` checks files, so a
tampered payload is refused like a tampered file.
"""
import copy
import io
import json
import pickle
import pickletools

import numpy as np
import pytest

import runtime as rt
import transpiler
from runtime.deploy import LoadedProgram, program_from_payload
from runtime.serialization import ProgramFormatError, write_params
from transpiler import InputSpec, to_static


class Net(rt.nn.Layer):
    """Parameters, a tensor `while` and a tensor `if`, two outputs."""

    def __init__(self):
        super().__init__()
        self.fc = rt.nn.Linear(4, 3)

    def forward(self, x):
        h = self.fc(x)
        while (rt.abs(h) > 1.0).any():
            h = rt.where(rt.abs(h) > 1.0, h * 0.5, h)
        if h.sum() > 0:
            h = h + 1.0
        return h, rt.nn.functional.relu(h).sum(axis=1)


def scaled(x, y):
    return x * 2.0 + y


X = (np.arange(20, dtype=np.float32).reshape(5, 4) - 7) / 3
SPEC = [InputSpec([None, 4], "float32", "x")]


def globals_named(payload):
    """The (module, name) of every GLOBAL / STACK_GLOBAL in a pickle."""
    found, strings = [], []
    for op, arg, _ in pickletools.genops(payload):
        if op.name == "GLOBAL":
            found.append(tuple(arg.split(" ")))
        elif op.name == "STACK_GLOBAL":
            found.append((strings[-2], strings[-1]))
        elif isinstance(arg, str):
            strings.append(arg)
    return found


def assert_same_outputs(a, b):
    for got, want in zip(a, b):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.fixture
def loaded(tmp_path):
    transpiler.save(Net(), tmp_path / "net", input_spec=SPEC)
    return transpiler.load(tmp_path / "net")


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_loaded_program_pickles_as_program_and_parameters(loaded, protocol):
    payload = pickle.dumps(loaded, protocol=protocol)
    named = globals_named(payload)
    if protocol < 3:        # before protocol 3 pickle has no bytes opcode: it rebuilds bytes with _codecs.encode
        named = [g for g in named if g != ("_codecs", "encode")]
    assert named == [("runtime.deploy", "program_from_payload")]
    opcodes = {op.name for op, _, _ in pickletools.genops(payload)}
    assert not opcodes & {"INST", "OBJ", "NEWOBJ", "NEWOBJ_EX", "BUILD", "EXT1", "EXT2", "EXT4"}
    copy = pickle.loads(payload)
    assert isinstance(copy, LoadedProgram) and copy.input_names == loaded.input_names
    assert_same_outputs(copy(X), loaded(X))
    assert copy.state_dict().keys() == loaded.state_dict().keys()


def test_loaded_program_keeps_its_device_and_iteration_bound(tmp_path):
    transpiler.save(Net(), tmp_path / "net", input_spec=SPEC)
    bounded = transpiler.load(tmp_path / "net", max_iterations=0)
    copy = pickle.loads(pickle.dumps(bounded))
    assert copy.device == "cpu" and copy.executor.max_iterations == 0
    with pytest.raises(rt.IterationLimitError):
        copy(X * 100)


def test_static_function_with_input_spec_pickles_as_its_program():
    static = to_static(scaled, input_spec=[InputSpec([None, 4], "float32", "x"), InputSpec([4], "float32", "y")])
    payload = pickle.dumps(static)
    assert globals_named(payload) == [("runtime.deploy", "program_from_payload")]
    copy = pickle.loads(payload)
    y = np.ones(4, np.float32)
    assert isinstance(copy, LoadedProgram)
    np.testing.assert_array_equal(copy(X, y).numpy(), X * 2.0 + y)
    np.testing.assert_array_equal(copy(X[:2], y).numpy(), X[:2] * 2.0 + y)     # the spec's dynamic first dim


def test_static_function_traced_once_pickles_that_signature():
    static = to_static(scaled)
    y = np.ones(4, np.float32)
    want = static(rt.tensor(X), rt.tensor(y))
    copy = pickle.loads(pickle.dumps(static))
    assert [s.shape for s in copy.input_specs] == [(5, 4), (4,)]
    np.testing.assert_array_equal(copy(X, y).numpy(), want.numpy())


def test_static_function_needs_one_program_to_pickle():
    static = to_static(scaled)
    with pytest.raises(ValueError, match="not been traced yet"):
        pickle.dumps(static)
    static(rt.tensor(X), rt.tensor(X))
    static(rt.tensor(X[:2]), rt.tensor(X[:2]))
    with pytest.raises(ValueError, match=r"input_spec=.*traced for 2 signatures"):
        pickle.dumps(static)


def test_to_static_layer_pickles_as_its_program_and_a_plain_layer_as_an_object():
    net = Net()
    static = to_static(net)
    want = static(rt.tensor(X))
    payload = pickle.dumps(static)
    assert globals_named(payload) == [("runtime.deploy", "program_from_payload")]
    assert_same_outputs(pickle.loads(payload)(X), want)
    plain = pickle.loads(pickle.dumps(Net()))
    assert isinstance(plain, Net) and set(plain.state_dict()) == {"fc.weight", "fc.bias"}


def test_copies_are_not_programs():
    net = Net()
    twin = copy.deepcopy(net)
    assert isinstance(twin, Net) and twin.fc is not net.fc and twin.fc.weight is not net.fc.weight
    np.testing.assert_array_equal(twin.fc.weight.numpy(), net.fc.weight.numpy())
    assert copy.copy(net).fc is net.fc
    static = to_static(net)
    for copier in (copy.copy, copy.deepcopy):
        with pytest.raises(TypeError, match="to_static Net cannot be copied"):
            copier(static)
    function = to_static(scaled)
    assert isinstance(copy.copy(function), type(function))
    with pytest.raises(TypeError, match="cannot be deep-copied"):
        copy.deepcopy(function)


def reduced(loaded):
    """(constructor, (json text, npz bytes, device, max_iterations)) as the pickle carries them."""
    return loaded.__reduce__()


def test_tampered_parameters_are_refused(loaded, tmp_path):
    constructor, (text, params, *rest) = reduced(loaded)
    assert constructor is program_from_payload
    payload = pickle.dumps(loaded)
    flipped = bytearray(params)
    flipped[params.index(loaded.state_dict()["fc.weight"].numpy().tobytes())] ^= 1    # a bit of the weight
    with pytest.raises(ProgramFormatError, match="pickled parameters"):
        pickle.loads(payload.replace(params, bytes(flipped)))
    transpiler.save(Net(), tmp_path / "other", input_spec=SPEC)      # valid parameters of another save
    with open(tmp_path / "other.params.npz", "rb") as f:
        other = f.read()
    assert len(other) == len(params)
    with pytest.raises(ProgramFormatError, match="SHA-256 differs"):
        pickle.loads(payload.replace(params, other))


def test_a_tampered_program_is_refused(loaded):
    _, (text, *rest) = reduced(loaded)
    digest = json.loads(text)["params_sha256"]
    payload = pickle.dumps(loaded)
    other_digest = ("0" if digest[0] != "0" else "1") + digest[1:]
    # same-length edits keep the pickle well formed: only the Program's checks can refuse them
    for old, new, why in [(b'"while"', b'"whale"', "unknown op type 'whale'"),
                          (digest.encode(), other_digest.encode(), "SHA-256 differs")]:
        assert old in payload
        with pytest.raises(ProgramFormatError, match=why):
            pickle.loads(payload.replace(old, new, 1))


def test_hostile_payloads_get_the_loaders_checks(loaded):
    _, (text, params, device, bound) = reduced(loaded)
    doc = json.loads(text)
    del doc["params_sha256"]                # as a hand-made payload: the parameters' own checks answer
    bare = json.dumps(doc)
    name = next(iter(loaded.state_dict()))
    hostile = io.BytesIO()
    write_params(hostile, {name: loaded.state_dict()[name].numpy()})     # one parameter of two
    with pytest.raises(ProgramFormatError, match="missing parameter"):
        program_from_payload(bare, hostile.getvalue())
    objects = io.BytesIO()
    np.savez(objects, **{n: np.zeros(2, object) for n in loaded.state_dict()})
    with pytest.raises(ProgramFormatError, match="Python objects|pickle"):
        program_from_payload(bare, objects.getvalue())
    with pytest.raises(ProgramFormatError, match=r"\(JSON text, .npz bytes\)"):
        program_from_payload(bare, {n: t.numpy() for n, t in loaded.state_dict().items()})
    with pytest.raises(ProgramFormatError, match="not valid JSON"):
        program_from_payload("{" + bare, params)
