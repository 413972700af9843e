"""torch.ao.quantization's FX graph mode: prepare_fx (observers) and prepare_qat_fx (fake-quantize).

Both re-trace the module themselves and return a new GraphModule; the example inputs they want come
from the runner (`gm.meta["fxlens_example_inputs"]`). torch deprecates this API in favour of torchao's
pt2e flow; its warnings are silenced here, the pass is still the one torch ships.
"""

from __future__ import annotations

import warnings

import torch.fx as fx

EXAMPLE_INPUTS = "fxlens_example_inputs"


def _example_inputs(gm: fx.GraphModule) -> tuple:
    return tuple(gm.meta.get(EXAMPLE_INPUTS, ()))


def prepare(gm: fx.GraphModule) -> fx.GraphModule:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.ao.quantization import get_default_qconfig_mapping
        from torch.ao.quantization.quantize_fx import prepare_fx

        return prepare_fx(gm.eval(), get_default_qconfig_mapping("x86"), _example_inputs(gm))


def prepare_qat(gm: fx.GraphModule) -> fx.GraphModule:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.ao.quantization import get_default_qat_qconfig_mapping
        from torch.ao.quantization.quantize_fx import prepare_qat_fx

        return prepare_qat_fx(gm.train(), get_default_qat_qconfig_mapping("x86"), _example_inputs(gm))


def converted(prepared: fx.GraphModule) -> fx.GraphModule:
    """The prepared (and calibrated) module converted to int8 kernels: a copy, `prepared` stays as it is."""
    import copy

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.ao.quantization.quantize_fx import convert_fx

        return convert_fx(copy.deepcopy(prepared).eval())
