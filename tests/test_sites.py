"""zoo.sites: a program's sample sites from one abstract trace, equal to those of a run, with a run as the fallback."""

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro import handlers

import zoo
from zoo import sites


def run_sites(program, **data):
    """The sites as the seeded trace of a run gives them: name -> (shape, support, observed), in program order."""
    with handlers.seed(rng_seed=0):
        trace = handlers.trace(program).get_trace(**data)
    return [
        (n, jnp.shape(s["value"]), str(s["fn"].support), s["is_observed"])
        for n, s in trace.items()
        if s["type"] == "sample"
    ]


def as_rows(found):
    return [(n, s.shape, str(s.support), s.is_observed) for n, s in found.items()]


@pytest.mark.parametrize("name", ["blr", "gp/regression", "gp/additive", "lgssm"])
def test_abstract_sites_equal_those_of_a_run(name):
    spec = zoo.get(name)
    data = {k: jnp.asarray(v) for k, v in spec.simulate(jax.random.key(0)).observed.items()}
    assert as_rows(sites.sample_sites(spec.program, **data)) == run_sites(spec.program, **data)


def counting_program(calls):
    def program(x, y=None):
        jax.debug.callback(lambda: calls.append(1))  # runs only when the program is executed
        scale = numpyro.sample("scale", dist.HalfNormal(1.0))
        numpyro.sample("y", dist.Normal(0.0, scale).expand([x.shape[0]]), obs=y)

    return program


def test_nothing_runs():
    calls = []
    found = sites.sample_sites(counting_program(calls), x=jnp.zeros(3), y=jnp.ones(3))
    assert calls == []
    assert as_rows(found) == [("scale", (), "Positive(lower_bound=0.0)", False), ("y", (3,), "Real()", True)]
    assert list(sites.latent(found)) == ["scale"]


def branching_program(x, y=None):
    """Branches on a data value in Python: only a run can say which sites exist."""
    if float(jnp.max(x)) > 0:
        numpyro.sample("positive_branch", dist.Normal(0.0, 1.0))
    numpyro.sample("y", dist.Normal(0.0, 1.0).expand([x.shape[0]]), obs=y)


def computed_support_program(x):
    """A support whose bound is computed: the abstract trace would hold a tracer in it."""
    numpyro.sample("u", dist.Uniform(0.0, jnp.max(x) + 1.0))


def test_programs_that_need_values_are_run():
    assert list(sites.sample_sites(branching_program, x=jnp.ones(2))) == ["positive_branch", "y"]
    assert list(sites.sample_sites(branching_program, x=-jnp.ones(2))) == ["y"]
    found = sites.sample_sites(computed_support_program, x=jnp.array([1.0, 3.0]))
    assert float(found["u"].support.upper_bound) == 4.0

    def branching_guide(x):
        if float(jnp.max(x)) > 0:
            numpyro.param("loc", jnp.zeros(2))

    assert sites.param_shapes((branching_guide,), x=jnp.ones(2)) == {"loc": (2,)}


def test_param_shapes_of_a_program_and_its_guide():
    def model(x):
        numpyro.param("w", jnp.zeros((x.shape[0], 2)))

    def guide(x):
        numpyro.param("loc", jnp.zeros(x.shape[0]))

    assert sites.param_shapes((guide, model), x=jnp.zeros(5)) == {"loc": (5,), "w": (5, 2)}
