"""The side of the service that runs jobs: claiming them, grading them with the evaluator, recording results.

pool.py is the embedded pool of `kernelgrade serve` (judges.py picks its judges, judge.py is one judge
thread, compile_ahead.py builds queued submissions ahead of them); remote_worker.py is `kernelgrade worker`,
fed through the Celery app of celery_app.py. grading_request.py turns a stored job into an EvalRequest,
job_outcome.py an EvalResult into storage values, input_shapes.py fills in problems' input shapes.
"""
