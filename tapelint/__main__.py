"""`python -m tapelint`, and the `tapelint` command's entry point.

Signals are handled from the first line (`tapelint.interrupts`): importing the command
takes a while (click, libcst, the rules), and Ctrl-C in that time ends the run like any
other, with `error: interrupted` and status 130.
"""

from typing import NoReturn

from tapelint import interrupts


def main() -> NoReturn:
    interrupts.install()
    try:
        from tapelint.cli import main as command
    except KeyboardInterrupt:
        interrupts.end_interrupted()
    command()


if __name__ == "__main__":
    main()
