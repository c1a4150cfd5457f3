"""Reproductions of the source documents' tables and figures, one script each.

Each script is a module of this package that defines ``DESCRIPTION`` (one line, naming the table/figure and
document) and ``main(quick: bool, out: Path) -> None``; it writes the figure (PNG), the numbers behind it
(CSV) and a side-by-side comparison with the published values, which it keeps next to the script.
Add a script by listing its module name in ``SCRIPTS``. What full runs measured is kept next to the script in
``<name>_full_runs.md`` (never in docstrings) and appended to the run's comparison.md.
"""

import importlib
from dataclasses import dataclass
from pathlib import Path

from inference.files.atomic import atomic_write_text
from zoo.errors import unknown_name

HERE = Path(__file__).resolve().parent

SCRIPTS: list[str] = [
    "mchutchon_square_wave",
    "mchutchon_sigmoid",
    "mchutchon_kink_estep",
    "mchutchon_random_estep",
    "mchutchon_pgas_timing",
    "mchutchon_learning",
    "mchutchon_pilco",
    "mchutchon_dependent_transitions",
    "mchutchon_bayes_rbf",
    "mchutchon_chapter2",
    "mchutchon_cartpole_nigp",
    "mchutchon_model_error",
    "mchutchon_gp_prior_dynamics",
    "mchutchon_chapter3",
    "mchutchon_learning_curves",
    "mchutchon_step_timing",
    "mchutchon_backward_step",
    "franzese_svgp",
    "franzese_active_learning",
    "franzese_notes_figures",
    "kaiser_chapter2",
    "franzese_notes_ml2",
    "kaiser_dagp_noise_separation",
    "kaiser_dagp_multimodal",
    "kaiser_dagp_cartpole",
    "kaiser_nvc_vs_dsvi",
    "kaiser_wetchicken",
    "kaiser_reward_shaping",
    "kaiser_layer_collapse",
    "kaiser_bo_surrogates",
    "kaiser_policy_inference",
    "kaiser_amogp",
    "duvenaud_kernels",
    "duvenaud_additive_extrapolation",
    "duvenaud_concrete_additive",
    "duvenaud_abcd_reports",
    "duvenaud_abcd_solar",
    "duvenaud_abcd_extrapolation",
    "duvenaud_deep_priors",
    "duvenaud_iwmm",
    "duvenaud_iwmm_draws",
    "duvenaud_additive_kernels",
    "duvenaud_additive_tables",
    "duvenaud_abcd_synthetic",
    "duvenaud_abcd_mauna_loa",
    "duvenaud_abcd_nuts",
    "duvenaud_symmetric_manifold",
    "duvenaud_bayesian_quadrature",
    "duvenaud_gp_posterior",
    "nonconjugate_comparison",
    "ripley_synth",
    "duvenaud_additive_classification",
]


@dataclass(frozen=True)
class Figure:
    name: str
    description: str
    module: str


FIGURES = {
    name: Figure(name, importlib.import_module(f"paper_figures.{name}").DESCRIPTION, f"paper_figures.{name}")
    for name in SCRIPTS
}


def run_figure(name: str, quick: bool, out: Path) -> None:
    if name not in FIGURES:
        raise unknown_name("figure", name, FIGURES)
    target = out / name
    target.mkdir(parents=True, exist_ok=True)
    importlib.import_module(FIGURES[name].module).main(quick=quick, out=target)
    full_runs = HERE / f"{name}_full_runs.md"
    comparison = target / "comparison.md"
    if full_runs.is_file() and comparison.is_file():
        atomic_write_text(comparison, comparison.read_text().rstrip() + "\n\n" + full_runs.read_text())
