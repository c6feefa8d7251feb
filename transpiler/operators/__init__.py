"""The functions converted code calls: Python semantics on Python values, graph ops on tensors.

Each operator reads like the Python it stands for: the Python path first
(exactly what the original statement did), the graph path second (when a
condition or iterable is a symbolic Variable). Converted code refers to this
package as `_jst`; its modules, bottom to top (each imports only those above it in this list):

  base          what every operator asks: is a value traced, its Python truth when known, placeholders
  calls         convert_call (user code converted, builtins overloaded) and the table of overloads
  strings       f-strings: text, or a Text formatted when the Program runs
  regions       around a tensor-dependent if/while/for: its origin for errors, objects and closure cells
                it must not change behind the converter's back, values left when an exception ends it
  exceptions    raise/assert, `try` bodies of converted code, `except` clauses
  logical       and / or / not
  conditionals  if and conditional expressions, and merged containers written back into the user's
  iterables     range/enumerate/zip/len/reversed over tensors: what a graph `for` walks by index
  membership    in / not in / list.index
  loops         while and for
  py_builtins   the other builtins (min, max, any, all, sum, int, float, bool, isinstance, print)
  lists         list comprehensions, list and dict mutation and items
"""
from runtime.state import attr_cell, contents_cell, item_cell

from ..effects.calls import called_places

from .base import outer_value, return_placeholder, undefined
from .calls import convert_call, convert_in_place, convert_map
from .strings import convert_fstring
from .regions import partial_state, tensor_cell
from .exceptions import catching, check_caught, convert_assert, convert_raise
from .logical import (convert_logical_and, convert_logical_not, convert_logical_or, convert_test_and,
                      convert_test_or)
from .conditionals import convert_ifelse, convert_ifexp
from .iterables import convert_enumerate, convert_len, convert_range, convert_reversed, convert_zip
from .membership import convert_in, convert_index, convert_not_in
from .loops import convert_for, convert_while
from .py_builtins import (convert_all, convert_any, convert_bool, convert_float, convert_int, convert_isinstance,
                          convert_max, convert_min, convert_print, convert_stop_gradient, convert_sum)
from .lists import (convert_append, convert_call_item, convert_delitem, convert_extend, convert_getitem,
                    convert_insert, convert_list_comp, convert_pop, convert_setitem, convert_setitem_path)

__all__ = [name for name in dict(globals()) if name.startswith("convert_")] + ["partial_state",
    "undefined", "return_placeholder", "attr_cell", "item_cell", "contents_cell", "check_caught", "outer_value", "tensor_cell",
    "called_places"]
