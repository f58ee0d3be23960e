"""nmtmodels: PyTorch building blocks and model families for structure-aware NMT.

The package is the ground floor of the project: it never imports workflow code.
"""
__version__ = "0.1.0"
