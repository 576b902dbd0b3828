"""Declarations: 3-D convolution, deconvolution and pooling (NCDHW)."""
