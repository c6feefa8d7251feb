"""What `save` writes: whole files under concurrent saves, digests over everything a pickle carries,
and no trace of the author's machine (absolute source paths) in the Program."""
import json
import os
import pickle
import threading

import numpy as np
import pytest

import runtime as rt
import transpiler
from runtime.deploy import load_program, program_from_payload, program_payload, save_program
from runtime.serialization import ProgramFormatError
from transpiler import InputSpec, to_static


def _program(scale):
    w = rt.tensor(np.full((3,), scale, np.float32))
    static = to_static(lambda x: x * w, input_spec=[InputSpec([3], "float32", "x")])
    program = static.get_program(InputSpec([3], "float32", "x"))
    return program


def test_threads_saving_to_one_path_leave_files_that_load(tmp_path):
    programs = [_program(float(k)) for k in range(6)]
    path = tmp_path / "m"
    ones = np.ones(3, np.float32)
    for _ in range(8):
        barrier = threading.Barrier(len(programs))
        errors = []

        def save(program):
            try:
                barrier.wait(timeout=30)
                save_program(program, path)
            except BaseException as e:      # noqa: BLE001 - reported below
                errors.append(e)
        threads = [threading.Thread(target=save, args=(p,)) for p in programs]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not errors and not any(t.is_alive() for t in threads)
        (out,) = [load_program(path)(ones)]
        assert float(out.numpy()[0]) in range(6) and np.all(out.numpy() == out.numpy()[0])
        assert sorted(os.listdir(tmp_path)) == ["m.params.npz", "m.program.json"]      # no temporaries left


def test_a_failed_save_leaves_no_temporary_and_the_old_files(tmp_path):
    save_program(_program(2.0), tmp_path / "m")
    program = _program(3.0)
    program.parameters = {name: object() for name in program.parameters}     # cannot be written
    with pytest.raises(Exception):
        save_program(program, tmp_path / "m")
    assert sorted(os.listdir(tmp_path)) == ["m.params.npz", "m.program.json"]
    assert float(load_program(tmp_path / "m")(np.ones(3, np.float32)).numpy()[0]) == 2.0


def _scaled(x):
    return x * 2.5 + 1.0


def test_a_pickle_whose_program_half_was_edited_is_refused():
    static = to_static(_scaled, input_spec=[InputSpec([3], "float32", "x")])
    payload = pickle.dumps(static)
    x = np.ones(3, np.float32)
    np.testing.assert_allclose(pickle.loads(payload)(x).numpy(), 3.5)
    assert payload.count(b"2.5") == 1
    edited = payload.replace(b"2.5", b"7.5")        # same length: still a well-formed pickle and Program
    with pytest.raises(ProgramFormatError, match="SHA-256 of its Program JSON and parameters"):
        pickle.loads(edited)


def test_a_payload_without_its_digest_is_refused():
    text, params = program_payload(_program(2.0))
    data = json.loads(text)
    np.testing.assert_allclose(program_from_payload(text, params)(np.ones(3, np.float32)).numpy(), 2.0)
    del data["payload_sha256"]
    with pytest.raises(ProgramFormatError, match="carries no payload_sha256"):
        program_from_payload(json.dumps(data), params)


def _origins(json_path):
    with open(json_path) as f:
        doc = json.load(f)
    ops = [op for block in doc["blocks"] for op in block["ops"]]
    return [op.get("origin") for op in ops] + [op["attrs"]["origin"] for op in ops if "origin" in op["attrs"]]


def _checked_scaled(x):
    rt.assert_(rt.all(x > 0), "positive")
    return x * 2.5 + 1.0


def test_saved_origins_are_relative_and_can_be_dropped(tmp_path):
    static = to_static(_checked_scaled, input_spec=[InputSpec([3], "float32", "x")])
    here = os.path.abspath(__file__)
    assert any(here in (o or "") for o in [op.origin for op in static.deployed_program().global_block.ops])
    json_path, _ = transpiler.save(static, tmp_path / "m")
    origins = _origins(json_path)
    assert origins and all(o is not None for o in origins)
    assert all(o.startswith("test_deploy_files.py:") for o in origins), origins     # tests/unit has no __init__
    with open(json_path) as f:
        assert os.path.dirname(here) not in f.read()
    with pytest.raises(AssertionError, match=r"positive.*test_deploy_files.py:\d+"):
        transpiler.load(tmp_path / "m")(-np.ones(3, np.float32))
    json_path, _ = transpiler.save(static, tmp_path / "bare", origins=False)
    assert set(_origins(json_path)) == {None}
    with pytest.raises(AssertionError, match="positive"):
        transpiler.load(tmp_path / "bare")(-np.ones(3, np.float32))
    text, _ = program_payload(static.deployed_program())       # what a pickle carries
    assert os.path.dirname(here) not in text


def test_relative_origin_keeps_the_package_path(tmp_path):
    from runtime.serialization import relative_origin
    package = tmp_path / "proj" / "pkg" / "sub"
    package.mkdir(parents=True)
    (tmp_path / "proj" / "pkg" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    assert relative_origin(f"{package / 'mod.py'}:12") == "pkg/sub/mod.py:12"
    assert relative_origin(f"{tmp_path / 'script.py'}:3") == "script.py:3"
    assert relative_origin("<stdin>:3") == "<stdin>:3"
    assert relative_origin("pkg/sub/mod.py:12") == "pkg/sub/mod.py:12"       # read back from a saved file
    assert relative_origin("examples/mlp.py:3") == "examples/mlp.py:3"
    assert relative_origin(None) is None


def test_an_exported_module_names_no_absolute_path(tmp_path):
    static = to_static(_checked_scaled, input_spec=[InputSpec([3], "float32", "x")])
    py_path, _ = transpiler.export_python(static, tmp_path / "exported")
    with open(py_path) as f:
        source = f.read()
    assert "test_deploy_files.py:" in source and os.path.dirname(os.path.abspath(__file__)) not in source


def test_saving_a_loaded_program_keeps_its_origins(tmp_path, monkeypatch):
    static = to_static(_checked_scaled, input_spec=[InputSpec([3], "float32", "x")])
    first, _ = transpiler.save(static, tmp_path / "a")
    package = tmp_path / "somewhere" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    monkeypatch.chdir(package)          # a relative origin is not resolved against the working directory
    second, _ = transpiler.save(transpiler.load(tmp_path / "a"), tmp_path / "b")
    assert _origins(first) == _origins(second)
