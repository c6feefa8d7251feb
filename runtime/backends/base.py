"""The Backend protocol every device implements."""


class DeviceUnavailableError(RuntimeError):
    """Raised when a device is asked for and cannot be used on this machine."""


class Backend:
    """One device's array module plus the few operations the runtime needs around it.

    Kernels are written against `xp` (NumPy's API, which CuPy mirrors), so a new
    backend is an array module and these methods, nothing more.
    """

    name = "abstract"
    xp = None

    def __deepcopy__(self, memo):
        return self         # one backend per device: a copied tensor (copy.deepcopy of a Layer) stays on it

    def __copy__(self):
        return self

    def asarray(self, value, dtype=None):
        """Bring host or device data onto this backend (no copy when already there)."""
        raise NotImplementedError

    def to_numpy(self, array):
        """Copy to a host NumPy array."""
        raise NotImplementedError

    def is_native(self, array):
        """Whether `array` already is this backend's array type."""
        raise NotImplementedError

    def synchronize(self):
        """Wait for queued device work; a no-op on synchronous devices."""

    def fuse(self, fn):
        """Optionally compile an elementwise Python function into one kernel."""
        return fn

    def __repr__(self):
        return f"<{self.name} backend>"
