"""AMO-GP: aligned, warped multi-output GPs (Kaiser 2021, ch. 4; docs/sources/kaiser.md#amogp), family ``amogp``.

D outputs, each a three-layer deep GP y_d = g_d(f_d(a_d(X))): alignment a_d (identity mean), a shared
convolution-process layer f, warping g_d (identity mean); the options fix some alignments and warpings to the
identity (at least one of each, for identifiability). Engines: ``nvc`` (the nested variational compression bound
with the CP Psi-statistics, eqs. 4.6-4.9) and ``svi`` with ``guide="model"`` (DSVI through the layers).

- ``psi``: CP Psi-statistics and the identity-mean cross statistic;  ``layers``: the model as values, layer moments;
- ``bound``: the NVC bound and analytic predictive;  ``sampling``: ancestral (DSVI) predictive;
- ``program``: the NumPyro programs and guide;  ``data``: the artificial pair and the wind stand-in;
- ``predict``: what a figure reads from a fit (per-output predictive, alignments, warpings, latent f).
"""

from functools import partial

import numpy as np

from zoo.amogp import bound, config, data, layers, program, psi, sampling
from zoo.amogp.layers import AMOGP, CPLayer, SELayer
from zoo.amogp.program import Structure, model_from_values, structure_from
from zoo.nvc import NVCView
from zoo.registry import Dataset, ModelSpec, frozen, register_family

SOURCE = "Kaiser 2021, ch. 4 (eqs. 4.1-4.10; CP prefactor and Psi-statistics corrected, docs/sources/kaiser.md#amogp)"
INPUT_NAMES = ("X", "out")


class AMOGPSpec(ModelSpec):
    """A ModelSpec whose ``validate`` also checks the output indices (``program.check_data``) before compiling."""

    def validate(self, data) -> Dataset:
        dataset = super().validate(data)
        D = self.options["num_outputs"]
        obs = dataset.observed
        program.check_data(obs["X"], obs["out"], obs["Z"], obs["y"], D)
        if dataset.test and all(k in dataset.test for k in INPUT_NAMES):
            test = dataset.test
            program.check_data(test["X"], test["out"], obs["Z"], test.get("y"), D, every_output=False)
        return dataset


def _inputs(arrays) -> tuple:
    return arrays["X"], arrays["out"].astype(int)


def nvc_view(structure: Structure) -> NVCView:
    """The ``nvc`` engine's view: the bound and predictive of values, inputs (X, out)."""
    return NVCView(
        bound=lambda values, inputs, y, _: bound.nvc_bound(model_from_values(values, structure), *inputs, y),
        predict=lambda values, inputs, _, propagation: bound.predict(
            model_from_values(values, structure), *inputs, propagation
        ),
        inputs=_inputs,
        input_names=INPUT_NAMES,
        depth=3,
    )


def _build(name: str, num_outputs: int, fixed_alignments: tuple, fixed_warpings: tuple, warp_prior: tuple) -> ModelSpec:
    structure = structure_from(num_outputs, fixed_alignments, fixed_warpings, warp_prior)
    D = structure.num_outputs
    if name == "amogp":  # the NVC bound as the program
        prog, capabilities = partial(program.nvc_program, structure=structure), frozenset({"nvc"})
        views = {"nvc": nvc_view(structure)}
    else:  # DSVI: sampled layers, the model's guide
        prog, capabilities = partial(program.dsvi_program, structure=structure), frozenset({"continuous"})
        views = {"guide": partial(program.dsvi_guide, structure=structure)}
    return AMOGPSpec(
        name=name,
        summary=f"AMO-GP, {D} outputs, learnt alignments {structure.free_alignments}, warpings "
        f"{structure.free_warpings}",
        source=SOURCE,
        program=prog,
        simulate=data.simulate_artificial,
        data_shapes=frozen({"X": ("N", "K"), "out": ("N",), "Z": ("M", "K"), "y": ("N",)}),
        default_params=frozen({"noise": np.full(D, 0.01)}),
        capabilities=capabilities,
        views=frozen(views),
        options=frozen(
            {
                "num_outputs": D,
                "fixed_alignments": fixed_alignments,
                "fixed_warpings": fixed_warpings,
                "warp_prior": structure.warp_prior,
            }
        ),
    )


register_family("amogp", config.OPTIONS, "AMO-GP (alignment -> shared CP -> warping) under the NVC bound", SOURCE)(
    partial(_build, "amogp")
)
register_family("amogp/dsvi", config.OPTIONS, "AMO-GP sampled through its layers (DSVI; svi guide=model)", SOURCE)(
    partial(_build, "amogp/dsvi")
)


__all__ = [
    "AMOGP",
    "CPLayer",
    "SELayer",
    "Structure",
    "bound",
    "config",
    "data",
    "layers",
    "model_from_values",
    "program",
    "psi",
    "sampling",
    "structure_from",
]
