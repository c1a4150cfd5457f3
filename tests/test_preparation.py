"""``inference.run``'s preparation steps (docs/architecture.md#preparation): which engines get the GP-SSM's start.

The AR1-GP start is given only to an engine whose ``init`` option holds parameter starts (a mapping); NUTS's ``init``
names where its chains start (a string) and must reach the engine unchanged. Before this check a NUTS run on a GP-SSM
failed with "init names ['f', 'i', 'm', 'n', 'o', 'r', 'u'], which are not parameter sites". The engine itself is
replaced by a recorder: the check is about what the preparation step hands it, and compiles nothing.
"""

import numpy as np

import inference
from inference.applications import preparation
from zoo.data.kink_fixtures import TIMING_PARAMS
from zoo.gpssm.sparse import kink_timing_problem


def test_chain_start_string_is_not_taken_for_parameter_starts(monkeypatch):
    spec, observed = kink_timing_problem()
    handed = {}

    def record(spec, data, engine, seed, **options):
        handed.update(engine=engine, options=options)

    monkeypatch.setattr(preparation, "run_engine", record)
    inference.run(spec, {k: np.asarray(v) for k, v in observed.items()}, engine="nuts", params=TIMING_PARAMS)
    assert handed["engine"] == "nuts"
    assert "init" not in handed["options"]  # the engine's own default ("uniform") applies
