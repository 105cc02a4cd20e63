"""The judge's work on one evaluation: the trusted side that grades, the only one that sees seeds and
expected outputs.

pipeline.py runs the stages in order (evaluate(), precompile()); each stage has a module of its own:
validate.py, compile.py, load.py, correctness.py, timing_stage.py (with timed_outputs.py) and outcome.py,
which turns how the run ended into the verdict and the EvalResult. They share a Job (job.py: request,
device, work dir, stage clock) and write into a Record (record.py). compiled_baseline.py measures the
torch.compile baseline. What outlives one evaluation (run children, references, the host lock, the
precompiled header, the machine's facts) lives in host/.
"""
