"""A summary table a person can read on a terminal (``zoo run``; docs/architecture.md#readable-output).

ArviZ's summary has one row per component of every variable: ``zoo run dagp --engine svi`` printed 1,350 rows of a
nuisance latent (issue 39). ``condense`` keeps every row of the model's parameters (variables with at most
``per_variable`` components), shows them first, cuts each larger latent to its first ``per_variable`` rows and says
how many it left out and how to see them; it drops columns that are NaN in every row (a point-estimate engine such as
``ml2`` has no sd, MCSE, ESS or R-hat: one draw per chain).
"""

import pandas as pd


def variable_of(label: str) -> str:
    """``w[0, 1]`` -> ``w``."""
    return str(label).split("[", 1)[0]


def condense(table: pd.DataFrame, per_variable: int = 5, show_all: bool = False) -> tuple[pd.DataFrame, list[str]]:
    """(the rows to print, one line per variable cut short). Small variables come first, in their order."""
    variables = [variable_of(label) for label in table.index]
    sizes = pd.Series(variables).value_counts()
    order = list(dict.fromkeys(variables))
    small = [v for v in order if sizes[v] <= per_variable]
    large = [v for v in order if sizes[v] > per_variable]
    keep, notes = [], []
    labels = pd.Series(table.index, index=variables)
    for variable in small + large:
        rows = list(labels.loc[[variable]])
        if show_all or len(rows) <= per_variable:
            keep += rows
            continue
        keep += rows[:per_variable]
        notes.append(
            f"{variable}: {per_variable} of {len(rows)} rows shown, {len(rows) - per_variable} omitted "
            f"(--all-rows prints them; --out FILE.nc keeps every draw)"
        )
    shown = table.loc[keep]
    shown = shown.loc[:, shown.notna().any(axis=0)]
    return shown, notes
