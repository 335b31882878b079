"""Training code for the models we ship (outside the product apps and the wheel; needs the `train` extra)."""
