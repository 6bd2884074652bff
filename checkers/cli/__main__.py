"""`python -m groupspec.checkers.cli`: the command line."""
from groupspec.checkers.cli import main

main()
