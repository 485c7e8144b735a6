"""moe-oracle: decide, explain and run the fused mega-MoE backend for a model on a cluster.

Importing this package is cheap: it loads neither torch nor any kernel library. The data
path (:mod:`moe_oracle.numerics`, :mod:`moe_oracle.runtime`) imports torch when used.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
