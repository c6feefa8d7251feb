"""`rt.fft`: the array API's Fourier-transform extension (numpy.fft's names and results).

All transforms are one op (`fft` with the transform's name as an attr, see
runtime/ops/spectral.py): eager, traced and compiled alike, NumPy or CuPy.
"""
from .ops.spectral import (fft, fftfreq, fftn, fftshift, hfft, ifft, ifftn, ifftshift, ihfft, irfft, irfftn, rfft,
                           rfftfreq, rfftn)

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]
