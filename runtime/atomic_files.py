"""Files that appear whole or not at all: written under a unique temporary name beside them, then renamed.

    with replacing("out/model.npz") as temp:     # one file
        write_params(temp, arrays)

    staged = [Staged(p) for p in paths]          # several files put in place together, once all are written
    ... write each staged[i].temp ...
    commit_all(staged)                           # or discard_all(staged) on failure

A temporary is a new file in the target's own folder (so the rename never crosses
filesystems), named `.NAME.RANDOM.tmp` and created with O_EXCL: two writers, threads
or processes, never share one. `commit` flushes it to disk (fsync) before renaming it
onto the target, so a crash leaves the old file or the new one, never a mix.
"""
import contextlib
import os
import secrets

__all__ = ["Staged", "replacing", "commit_all", "discard_all"]

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


class Staged:
    """A new, empty temporary file `temp` beside `path`; `commit()` renames it onto `path`, `discard()` removes it."""

    def __init__(self, path):
        self.path = os.fspath(path)
        folder, name = os.path.split(self.path)
        while True:
            temp = os.path.join(folder, f".{name}.{secrets.token_hex(6)}.tmp")
            try:
                fd = os.open(temp, _CREATE, 0o666)     # the umask applies, as to a file made by open()
            except FileExistsError:
                continue
            os.close(fd)
            break
        self.temp = temp

    def commit(self):
        """Flush the temporary to disk and rename it onto `path` (replacing what was there)."""
        fd = os.open(self.temp, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(self.temp, self.path)

    def discard(self):
        """Remove the temporary if it is still there; `path` is left as it was."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.temp)


def commit_all(staged):
    """Put every staged file in place, in order; on a failure the ones not yet renamed are removed."""
    for i, one in enumerate(staged):
        try:
            one.commit()
        except BaseException:
            discard_all(staged[i:])
            raise


def discard_all(staged):
    for one in staged:
        one.discard()


@contextlib.contextmanager
def replacing(path):
    """Yield the path of a temporary beside `path`; it replaces `path` when the block ends without an error,
    and is removed when it raises."""
    staged = Staged(path)
    try:
        yield staged.temp
        staged.commit()
    except BaseException:
        staged.discard()
        raise
