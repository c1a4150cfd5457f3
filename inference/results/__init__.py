"""What a run returns and how it is read: InferenceData assembly and every ArviZ call (``diagnostics``), trace and
posterior plots (``plots``) and additive-component plots (``component_plots``)."""

from inference.results import component_plots, diagnostics, plots

__all__ = ["component_plots", "diagnostics", "plots"]
