"""What a run returns and how it is read: InferenceData assembly and every ArviZ call (``diagnostics``), the
engines' own diagnostics against stated thresholds (``health``), summaries a person can read (``readable``), trace
and posterior plots (``plots``) and additive-component plots (``component_plots``)."""

from inference.results import component_plots, diagnostics, health, plots, readable

__all__ = ["component_plots", "diagnostics", "health", "plots", "readable"]
