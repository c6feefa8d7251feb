"""runtime.atomic_files: a file is replaced whole or not at all, through a temporary no other writer shares."""
import os
import threading

import pytest

from runtime.atomic_files import Staged, commit_all, replacing


def test_replacing_puts_the_new_file_in_place_only_when_the_block_ends_well(tmp_path):
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with replacing(target) as temp:
            with open(temp, "wb") as f:
                f.write(b"half")
            raise RuntimeError("the writer failed")
    assert os.listdir(tmp_path) == ["f.bin"] and target.read_bytes() == b"old"
    with replacing(target) as temp:
        assert os.path.dirname(temp) == str(tmp_path) and target.read_bytes() == b"old"
        with open(temp, "wb") as f:
            f.write(b"new")
    assert os.listdir(tmp_path) == ["f.bin"] and target.read_bytes() == b"new"


def test_temporaries_are_unique_and_made_with_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        staged = [Staged(tmp_path / "f") for _ in range(50)]
    finally:
        os.umask(old)
    assert len({s.temp for s in staged}) == 50
    assert all(os.stat(s.temp).st_mode & 0o777 == 0o640 for s in staged)
    for s in staged:
        s.discard()
    assert os.listdir(tmp_path) == []


def test_writers_racing_on_one_path_leave_one_whole_file(tmp_path):
    target = tmp_path / "f.bin"
    payloads = [bytes([i]) * 300_000 for i in range(8)]
    failures = []

    def write(payload):
        try:
            for _ in range(5):
                with replacing(target) as temp:
                    with open(temp, "wb") as f:
                        f.write(payload)
        except Exception as e:          # noqa: BLE001 - reported below
            failures.append(e)
    threads = [threading.Thread(target=write, args=(p,)) for p in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not failures and not any(t.is_alive() for t in threads)
    assert target.read_bytes() in payloads
    assert os.listdir(tmp_path) == ["f.bin"]


def test_commit_all_removes_what_it_could_not_put_in_place(tmp_path):
    first, second = Staged(tmp_path / "a"), Staged(tmp_path / "b")
    os.mkdir(tmp_path / "b")                 # a folder where the file should go: its rename fails
    (tmp_path / "b" / "keep").write_bytes(b"")
    with pytest.raises(OSError):
        commit_all([first, second])
    assert sorted(os.listdir(tmp_path)) == ["a", "b"]
    assert os.listdir(tmp_path / "b") == ["keep"]
