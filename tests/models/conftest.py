import httpx
import pytest

from .loopback import start_server


@pytest.fixture
async def server(nursery):
    return await start_server(nursery)


@pytest.fixture
async def http_client():
    async with httpx.AsyncClient() as client:
        yield client
