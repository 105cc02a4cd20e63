"""The grading worker: claims jobs, grades them with the evaluator, records the results. The one place where
the evaluator and storage meet; it imports nothing of the HTTP service.

pool.py is the pool of judges (embedded in `kernelgrade serve` through dispatch.py, or behind a broker):
judges.py picks its judges, judge.py is one judge thread, compile_ahead.py builds queued submissions ahead of
them (build_slots.py says how many at once), progress_poster.py writes their progress. remote_worker.py is
`kernelgrade worker`, fed through the Celery app of celery_app.py. grading_request.py turns a stored job into
an EvalRequest, job_outcome.py an EvalResult into storage values, input_shapes.py fills in problems' input
shapes.
"""
