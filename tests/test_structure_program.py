"""A kernel structure as data (zoo.structure.program, the ``gp/structure`` model).

Exact checks: the encoded Gram matrix equals the kernel's own for sums, products, changepoints, windows and active
dimensions, in the kernel's exact capacity and in a larger one (rounding only); values go into the slots and come
back unchanged; an ML-II fit through the shared program reaches the per-structure fit's optimum from the same start;
the search gives the same trace either way, and compiles once per capacity.
"""

import numpy as np
import pytest

import zoo
from inference.applications.structure_search import search
from inference.applications.structure_search.fit import fit_ml2
from zoo.errors import OptionError
from zoo.kernels import SE, Additive, default_values, parse, site_names, with_values
from zoo.structure.program import Capacity, NotEncodable, encode, gram

EXPRESSIONS = [
    ("SE", 1),
    ("SE + Per x Lin", 1),
    ("CW((C + Per) x RQ, C)", 1),
    ("CP(SE, Lin x Per) + RQ", 1),
    ("WN + CP(SE x SE, C) x ZPer", 1),
    ("SE_0 x Per_1 + Lin_2", 3),
    ("(SE + Lin)_1 x Per_0 + M32_2", 3),
]


def random_kernel(expression, D, rng):
    kernel = parse(expression)
    return with_values(kernel, {name: rng.uniform(0.5, 2.0) for name in site_names(kernel)}, D)


@pytest.mark.parametrize(("expression", "D"), EXPRESSIONS)
def test_encoded_gram_equals_the_kernel(expression, D):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(25, D))
    kernel = random_kernel(expression, D, rng)
    encoding = encode(kernel, D)
    roomy = encoding.capacity.union(Capacity.of({"SE": 3, "Per": 2, "CP": 2}, 6, 5))
    reference = np.asarray(kernel(X))
    for capacity in (encoding.capacity, roomy):
        arrays = encoding.arrays(capacity)
        values = encoding.slot_values(kernel, capacity)
        K = np.asarray(gram(X, values, arrays["factor_index"], arrays["columns"], capacity))
        np.testing.assert_allclose(K, reference, rtol=1e-13, atol=1e-13 * np.abs(reference).max())
    back = encoding.kernel_values(kernel, values)
    for name in site_names(kernel):
        np.testing.assert_array_equal(np.ravel(back[name]), np.ravel(np.asarray(getattr_site(kernel, name))))


def getattr_site(kernel, name):
    from zoo.kernels.priors import parametrised_nodes

    pairs = [(n, p) for n in parametrised_nodes(kernel) for p in n.PARAMS]
    node, param = dict(zip(site_names(kernel), pairs, strict=True))[name]
    return getattr(node, param)


def test_slots_are_numbered_in_reading_order():
    encoding = encode(parse("CP(SE + Per, SE) x Per"), 1)
    assert encoding.nodes == (("CP", 0), ("SE", 0), ("Per", 0), ("SE", 1), ("Per", 1))
    # (SE_0 w + Per_0 w + SE_1 (1 - w)) x Per_1: three terms of three factors
    assert encoding.capacity == Capacity.of({"SE": 2, "Per": 2, "CP": 1}, 3, 3)


def test_what_cannot_be_encoded_says_so():
    with pytest.raises(NotEncodable, match="sees 2 input columns"):
        encode(SE(), 2)  # ARD over two columns: one slot sees one column
    with pytest.raises(NotEncodable, match="not among the encodable"):
        encode(Additive(max_order=1), 2)
    small = encode(parse("SE"), 1)
    with pytest.raises(ValueError, match="cannot hold"):
        encode(parse("SE + SE"), 1).arrays(small.capacity)
    with pytest.raises(OptionError, match="TYPE:COUNT"):
        zoo.get("gp/structure", slots="SE=2")
    with pytest.raises(OptionError, match="unknown slot types"):
        zoo.get("gp/structure", slots="SEE:1")
    with pytest.raises(OptionError, match="no base kernel"):
        zoo.get("gp/structure", slots="CP:1")


@pytest.fixture(scope="module")
def wiggly_line():
    rng = np.random.default_rng(3)
    x = np.linspace(-1.7, 1.7, 40)
    return x[:, None], np.sin(4 * x) + 0.5 * x + 0.1 * rng.normal(size=40)


def test_shared_fit_reaches_the_per_structure_optimum(wiggly_line):
    """One restart from the same start, scipy's L-BFGS on the same objective (up to the order of the sums): the
    same optimum. The stopping rule (relative gain < 2.2e-9 on |log p| ~ 30) leaves ~1e-7 nats, so 1e-5 nats is
    loose for agreement and far tighter than the gap to any other optimum."""
    X, y = wiggly_line
    kernel = with_values(parse("SE x Per + Lin"), default_values(parse("SE x Per + Lin")), 1)  # Lin's offset 1
    capacity = encode(kernel, 1).capacity.union(Capacity.of({"RQ": 1, "CP": 1}, 3, 3))
    own = fit_ml2(kernel, X, y, 0.1, restarts=1, optimizer="host-lbfgs")
    shared = fit_ml2(kernel, X, y, 0.1, restarts=1, optimizer="host-lbfgs", capacity=capacity)
    assert shared.log_likelihood == pytest.approx(own.log_likelihood, abs=1e-5)
    assert str(shared.kernel) == str(own.kernel)
    # a second structure within the capacity compiles nothing
    again = fit_ml2(parse("CP(SE, RQ) x Per"), X, y, 0.1, restarts=1, optimizer="host-lbfgs", capacity=capacity)
    assert again.compile_s == 0.0 and np.isfinite(again.log_likelihood)


@pytest.mark.slow  # ~13 s cold; test_shared_fit_reaches_the_per_structure_optimum is the quick variant
def test_search_gives_the_same_trace_with_either_program(wiggly_line):
    """One restart per candidate (no jitter draws): the two programs must agree candidate by candidate."""
    X, y = wiggly_line
    options = dict(depth=2, base=("SE", "Lin"), operators=("C.1", "C.2"), restarts=1, progress=lambda line: None)
    shared = search(X, y, program="shared", **options)
    own = search(X, y, program="per-structure", **options)
    assert [f.expression for f in shared.trace] == [f.expression for f in own.trace]
    np.testing.assert_allclose([f.bic for f in shared.trace], [f.bic for f in own.trace], atol=1e-4)
    # one program per group of similar size: depth 1 (four base kernels, one group) compiles once, and depth 2
    # fewer times than it has candidates
    depth1, depth2 = ([f for f in shared.trace if f.depth == d] for d in (1, 2))
    assert [f.compile_s > 0 for f in depth1] == [True, False]
    assert 0 < sum(f.compile_s > 0 for f in depth2) < len(depth2)
    with pytest.raises(OptionError, match="program"):
        search(X, y, program="own", **options)


def test_candidates_are_grouped_by_size_and_programs_reused():
    """Groups by terms and factors rounded up to powers of two; a group's capacity holds every member's slots and
    grows from depth to depth; a structure of more than MAX_SHARED_PRODUCTS terms x factors is left out."""
    from inference.applications.structure_search.search import MAX_SHARED_PRODUCTS, _capacities

    big, huge = "(SE + Lin) x (Per + RQ) x CP(SE, Lin)", "(SE + Lin) x (Per + RQ) x CP(SE, Lin) x CP(SE, Lin)"
    kernels = {k: parse(k) for k in ["SE + Lin", "Per + RQ", "SE x Per", big, huge]}
    encodings = {k: encode(kernel, 1) for k, kernel in kernels.items()}
    programs = {}
    capacities = _capacities(encodings, programs)
    assert capacities["SE + Lin"] == capacities["Per + RQ"] == Capacity.of({"SE": 1, "RQ": 1, "Lin": 1, "Per": 1}, 2, 1)
    assert capacities["SE x Per"] == Capacity.of({"SE": 1, "Per": 1}, 1, 2)
    assert (encodings[big].capacity.terms, encodings[big].capacity.factors) == (8, 4)  # 2 x 2 x 2 terms
    assert MAX_SHARED_PRODUCTS == 32 and big in capacities and huge not in capacities  # huge: 16 x 5 -> 16 x 8
    later = _capacities({"C + SE": encode(parse("C + SE"), 1)}, programs)
    assert later["C + SE"] == Capacity.of({"SE": 1, "RQ": 1, "Lin": 1, "Per": 1, "C": 1}, 2, 1)
