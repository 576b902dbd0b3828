"""Declarations: Sampling-window ops: argmax pooling, sample/desample, RoI pooling and alignment."""
