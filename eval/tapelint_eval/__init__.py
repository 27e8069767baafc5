"""The real-repository evaluation: materialise pinned repositories, run tapelint over each,
and compare its findings with the labels a person gave them (see `eval/README.md`)."""
