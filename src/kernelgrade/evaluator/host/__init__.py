"""What a judge keeps beyond one evaluation, for as long as its process lives on the host.

session.py is the judge's handle on one run child (a typed conversation over the wire protocol) and
reference.py the judge's side of a problem (its model, trial inputs and expected outputs): both are made per
evaluation and may be kept for the next. run_children.py keeps run children started ahead, reference_cache.py
references with their outputs, and warm.py bundles the two for a long-lived judge. host_lock.py is the lock
that CPU measurements and builds share with every other judge of the host, header_pch.py the precompiled
header the judge builds once per compiler and torch, environment.py the facts recorded about the machine,
hold_watch.py the watch that releases a held stream whose call waits for the device.
Nothing here imports the per-evaluation pipeline (judge/).
"""
