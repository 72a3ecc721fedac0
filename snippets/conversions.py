"""Calls readers make on a prediction that requires grad: conversions (``.float()``,
``.to(...)``, ``.contiguous()``, ``.cpu()``, ``.type_as()``) and layers that pass it on
(``nn.Identity``, a Dropout in ``eval()`` mode), and the predictions they make them on,
as the families stop-gradients.md draws from.

A call that has nothing to do (the tensor already has the dtype, device and memory
format asked for, and no copy is asked for) returns its input itself, under
``no_grad`` and ``inference_mode`` too; one that has something to do makes a new tensor.
Run this file to see which members of the product have nothing to do.
"""

from __future__ import annotations

import itertools

import torch
from families import labelled
from hypothesis import strategies as st
from reader_settings import FORMAT_MOVES, MOVES

CONVERSIONS = {**MOVES, **FORMAT_MOVES, "x.contiguous()": torch.Tensor.contiguous,
               "x.cpu()": torch.Tensor.cpu, "x.type_as(x)": lambda x: x.type_as(x),
               "nn.Identity()(x)": torch.nn.Identity(), "nn.Dropout().eval()(x)": torch.nn.Dropout().eval()}
PASSED_ON = ("nn.Identity()(x)", "nn.Dropout().eval()(x)")  # layers: they have nothing to do
PREDICTIONS = {"float32": lambda t: t, "float64": torch.Tensor.double,
               "float32, channels_last": lambda t: t.contiguous(memory_format=torch.channels_last)}
GRAD_MODES = ("inference_mode", "no_grad")


def conversion_families() -> tuple[st.SearchStrategy, ...]:
    """(a name of ``CONVERSIONS``, a name of ``PREDICTIONS``, ``no_grad`` or
    ``inference_mode``)."""
    return (labelled(st.sampled_from(sorted(CONVERSIONS)),
                     ".to(), .float(), .double(), .contiguous(), .cpu(), .type_as(): to another "
                     "dtype, device or memory format, a copy (copy=True), or to what the tensor "
                     "already is; nn.Identity and a Dropout in eval mode"),
            labelled(st.sampled_from(sorted(PREDICTIONS)),
                     "predictions (2, 3, 2, 2) that require grad: float32, float64, float32 channels_last"),
            labelled(st.sampled_from(GRAD_MODES), "no_grad and inference_mode"))


def prediction(kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(a leaf (2, 3, 2, 2), the prediction ``2 * leaf`` of ``kind`` made from it)."""
    leaf = torch.randn(2, 3, 2, 2, generator=torch.Generator().manual_seed(0), requires_grad=True)
    return leaf, PREDICTIONS[kind](leaf * 2)


def has_nothing_to_do(way: str, pred: torch.Tensor) -> bool:
    """Whether call ``way`` of ``pred`` asks for no copy and for the dtype, device
    and strides ``pred`` already has (read off what it makes of ``pred.detach()``)."""
    made = CONVERSIONS[way](pred.detach())
    asked = (made.dtype, made.device, made.stride())
    return "copy=True" not in way and asked == (pred.dtype, pred.device, pred.stride())


def main() -> None:
    for way, kind in itertools.product(sorted(CONVERSIONS), sorted(PREDICTIONS)):
        leaf, pred = prediction(kind)
        with torch.no_grad():
            out = CONVERSIONS[way](pred)
        assert (out is pred) == has_nothing_to_do(way, pred), (way, kind)
        print(f"{way:45s} {kind:25s} nothing to do: {out is pred}")


if __name__ == "__main__":
    main()
