"""Exercise checkers, one module per notebook (nbNN.py), loaded on first use."""
