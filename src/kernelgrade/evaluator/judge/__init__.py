"""The judge: the trusted process that grades, and the only one that sees seeds and expected outputs.

pipeline.py runs the stages in order (evaluate(), precompile()); each stage has a module of its own:
validate.py, compile.py, load.py, correctness.py, timing_stage.py (with timed_outputs.py) and outcome.py,
which turns how the run ended into the verdict and the EvalResult. They share a Job (job.py: request,
device, work dir, stage clock) and write into a Record (record.py). reference.py is the judge's side of
the problem, session.py its conversation with the run child, compiled_baseline.py the torch.compile
baseline, environment.py the facts recorded about the machine. warm.py bundles what a long-lived judge keeps
between evaluations (run_children.py, reference_cache.py); host_lock.py is the lock its CPU measurements
share with the other judges of the host.
"""
