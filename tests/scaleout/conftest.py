from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from kernelgrade.config import Settings
from kernelgrade.serve import build_app, prepare_database
from tests.scaleout.cluster import BROKERS, TEST_LEASE_S, Cluster, broker_unavailable
from tests.service.servers import ThreadServer
from tests.storage.databases import fresh_database_url

ClusterFactory = Callable[..., Cluster]


@pytest.fixture(params=sorted(BROKERS))
def broker_url(request: pytest.FixtureRequest) -> str:
    url = BROKERS[str(request.param)]
    reason = broker_unavailable(url)
    if reason:
        pytest.skip(reason)
    return url


@pytest.fixture
def cluster_factory(broker_url: str, tmp_path: Path) -> Iterator[ClusterFactory]:
    """Makes a Cluster (API on a fresh Postgres schema, dispatch = celery) with settings overrides."""
    made: list[tuple[Cluster, ThreadServer]] = []
    with fresh_database_url("postgres", tmp_path) as url:

        def make(**overrides: str) -> Cluster:
            # Queues of their own: other test runs may share this broker at the same time. No rate limit:
            # the tests poll every evaluation twice a second.
            prefix = f"kg-test-{uuid.uuid4().hex[:8]}-"
            settings = Settings.from_env({}, data_dir=tmp_path / "api", database_url=url, broker_url=broker_url,
                                         queue_prefix=prefix, dispatch="celery", timing_profile="fast",
                                         lease_seconds=TEST_LEASE_S, rate_limit_per_minute=0,
                                         **{k: int(v) for k, v in overrides.items()})
            database = prepare_database(settings)
            server = ThreadServer(build_app(settings, database)).__enter__()
            env = {f"KERNELGRADE_{k.upper()}": v for k, v in {**overrides, "queue_prefix": prefix}.items()}
            cluster = Cluster(tmp_path, url, broker_url, httpx.Client(base_url=server.url, timeout=30.0), env)
            made.append((cluster, server))
            return cluster

        yield make
        for cluster, server in made:
            cluster.stop()
            cluster.api.close()
            server.__exit__(None, None, None)
