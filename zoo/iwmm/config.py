"""Options of the ``iwmm`` model family, declared once (docs/architecture.md#model-options)."""

from zoo.options import Option

WARPINGS = ("gp", "identity")

OPTIONS = {
    "warping": Option("str", "gp", "gp: the iWMM (GP-LVM warp); identity: the iGMM baseline (Y = X)", choices=WARPINGS),
    "latent_dim": Option("int", None, "Q, the latent dimension (None: Q = D)", minimum=1, optional=True),
    "max_clusters": Option("int", 20, "K, slots of the fixed-size label table (DP truncation)", minimum=1),
    "concentration": Option("float", 1.0, "eta, the DP (CRP) concentration", above=0.0),
    "prior_r": Option("float", 1.0, "r, relative precision of the cluster means (E.2)", above=0.0),
    "prior_nu": Option("float", None, "nu, Wishart degrees of freedom (None: Q); above Q - 1", optional=True),
}
