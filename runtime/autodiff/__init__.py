"""Reverse-mode automatic differentiation: one engine, two doors.

- `engine`: reverse accumulation over recorded op applications, calling each op's `vjp`.
- `tape`: the eager record (`loss.backward()`, `.grad`, `no_grad`).
- `functional`: `grad` and `value_and_grad`, eagerly, while tracing and on static functions.
- `replay`, `control_flow`, `arrays`: the gradients of Programs, `cond`, `while` and tensor arrays.
"""
