"""`python -m sim.cli`: the `sim` command line."""

from sim.cli import main

main()
