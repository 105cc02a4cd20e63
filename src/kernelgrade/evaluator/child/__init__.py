"""What runs inside the box, started as `python -m kernelgrade.evaluator.child.<name>`.

compile_child.py builds the submission's extensions (no GPU), through header_pch.py (main.cpp against a
precompiled torch/extension.h) and lean_header.py (CUDA sources without it first), wrappers of load_inline
shaped by inline_call.py; run_child.py loads ModelNew and serves the judge's calls and timed phases.
channel.py is their end of the JSON-line pipe. What crosses it is defined in wire/, which both sides import.
Nothing here imports the judge, its host resources or the sandbox.
"""
