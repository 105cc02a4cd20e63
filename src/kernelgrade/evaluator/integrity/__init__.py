"""The checks that stand between a submission and a believed number (docs/threats.md).

In the child, before and around the submission: guard.py (rebound names), precision_flags.py (strict fp32 and
changes to it), tensor_checks.py (plain tensors, fingerprints), threads.py (its own threads), l2.py
(persisting-L2 reset). In the judge, from outside: static_scan.py (the source), proctree.py (the child's
process tree), roofline.py (a time no kernel can beat), and crosscheck.py, which turns the child's claims and
the judge's own observations into findings. Nothing here imports the judge's pipeline or the sandbox.
"""
