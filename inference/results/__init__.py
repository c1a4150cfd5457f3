"""What a run returns and how it is read: InferenceData assembly and every ArviZ call (``diagnostics``), the
engines' own diagnostics against stated thresholds (``health``), summaries a person can read (``readable``), trace
and posterior plots (``plots``) and additive-component plots (``component_plots``), the gym's b^2 metric
(``gym_metrics``) and the reference-posterior format (``references``)."""

from inference.results import component_plots, diagnostics, gym_metrics, health, plots, readable, references

__all__ = ["component_plots", "diagnostics", "gym_metrics", "health", "plots", "readable", "references"]
