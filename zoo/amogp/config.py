"""AMO-GP's fixed choices: priors, initial variational scales and the family's options (Kaiser 2021, sec. 4.2-4.3).

The text states only the shape of the priors: the alignments a_d and warpings g_d "prefer longer lengthscales and
smaller variances than f" (sec. 4.3), so that the model does not explain everything in an upper layer. The values
are ours (docs/sources/kaiser.md#amogp-defaults), for inputs scaled to [0, 1] and outputs of unit scale:
LogNormal(log location, scale) for every positive site.
"""

import math

from zoo.options import Option

# (location, scale) of LogNormal(log location, scale)
PRIORS = {
    "align_lengthscale": (0.5, 0.5),
    "align_variance": (0.02, 1.0),
    "align_noise": (1e-5, 1.0),
    "cp_variance": (0.5, 1.0),  # marginal variance of each output of f (ConvolutionProcess.from_variance)
    "cp_lengthscale": (0.05, 0.7),  # smoothing lengthscale l; f's SE lengthscale is sqrt(2) l
    "cp_noise": (1e-4, 1.0),
    "warp_lengthscale": (1.0, 0.5),
    "warp_variance": (0.1, 1.0),
    "noise": (0.01, 1.5),
}


def prior_loc_scale(name: str) -> tuple[float, float]:
    """(mu, sigma) of the site's LogNormal prior."""
    location, scale = PRIORS[name]
    return math.log(location), scale


# Initial scale of q(v) (whitened): the alignment layer starts nearly deterministic at the identity (low initial
# covariance, docs/sources/kaiser.md#deep-gp-defaults); the shared and warping layers start wider.
Q_SCALE = {"align": math.sqrt(1e-5), "cp": math.sqrt(1e-3), "warp": math.sqrt(1e-3)}
NUM_WARP_INDUCING = 10  # inducing inputs of each warping, spread over the range of y

OPTIONS = {
    "num_outputs": Option("int", 2, "number of outputs D (AMO-GP needs at least 2)", minimum=1),
    "fixed_alignments": Option(
        "int",
        (0,),
        "outputs whose alignment is the identity (identifiability: at least one)",
        minimum=0,
        sequence=True,
    ),
    "fixed_warpings": Option("int", (1,), "outputs whose warping is the identity", minimum=0, sequence=True),
    # ours, not the thesis' (docs/sources/kaiser.md#amogp-recipe): a tighter warping prior keeps g_d monotone
    "warp_prior": Option(
        "float",
        (PRIORS["warp_variance"][0], PRIORS["warp_lengthscale"][0]),
        "medians (variance, lengthscale) of the warpings' LogNormal priors",
        above=0.0,
        sequence=True,
    ),
}
