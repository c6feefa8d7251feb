"""Creation ops make arrays from shapes and fill values: no gradient flows into them."""
from .support import nondifferentiable

nondifferentiable("constant", "zeros", "ones", "full", "arange", "linspace", "eye", "full_like")
