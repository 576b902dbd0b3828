"""Declarations: Image-space ops: crop-and-resize, upsampling and resizing variants."""
