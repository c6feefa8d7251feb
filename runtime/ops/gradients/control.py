"""Side-effect ops (print, assert, raise) and the unbound-name placeholder carry no gradient."""
from .support import nondifferentiable

nondifferentiable("print", "assert", "raise", "undefined")
