"""`python -m tapelint`."""

from tapelint.cli import main

main()
