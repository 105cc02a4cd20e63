"""A typed Python client of the kernelgrade API, sync (`Client`) and asyncio (`AsyncClient`), on httpx.

It speaks to the server only over HTTP, and reads the answers into the API's own schemas
(kernelgrade.service.schemas, pydantic only): it imports no FastAPI, SQLAlchemy, worker or evaluator. An RL
loop submits a round, then takes the verdicts as they come:

    with Client("http://gpu-box:8000", api_key=key) as client:
        items = client.submit_many(SubmissionIn(problem=name, source=source, model="policy-7")
                                   for name, source in candidates)
        ids = [item.submission.id for item in items if item.submission is not None]
        for result in client.as_completed(ids):
            print(result.id, result.evaluation.verdict, result.evaluation.speedup)
"""

from kernelgrade.client.async_client import AsyncClient
from kernelgrade.client.errors import ApiError, ServerUnreachable
from kernelgrade.client.sync_client import Client
from kernelgrade.service.schemas import (
    BatchItemOut,
    EvaluationOut,
    SubmissionIn,
    SubmissionLimitsOut,
    SubmissionLookupOut,
    SubmissionOut,
)

__all__ = [
    "ApiError",
    "AsyncClient",
    "BatchItemOut",
    "Client",
    "EvaluationOut",
    "ServerUnreachable",
    "SubmissionIn",
    "SubmissionLimitsOut",
    "SubmissionLookupOut",
    "SubmissionOut",
]
