"""How long a job waits between its creation and its claim when the worker is idle:
``python -m bench.wakeup --api http://127.0.0.1:PORT --target http://127.0.0.1:PORT``.

Run against a ``taskcrawler serve`` (or ``api`` + ``worker``) and a ``python -m bench.target``
already started. One job at a time, each after the previous one was claimed, so that the figure
is the wake-up path (publish, transport, consume, claim), not a backlog. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from datetime import datetime

import aiohttp


async def measure(api: str, target: str, jobs: int, first_page: int) -> dict[str, float]:
    waits: list[float] = []
    async with aiohttp.ClientSession() as session:
        for n in range(jobs):
            url = f"{target}/page/{first_page + n}"
            async with session.post(f"{api}/api/v1/jobs", json={"url": url}) as response:
                job = await response.json()
            deadline = time.monotonic() + 30
            while not job.get("started_at"):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"job {job['id']} not claimed within 30 s")
                await asyncio.sleep(0.01)
                async with session.get(f"{api}/api/v1/jobs/{job['id']}") as response:
                    job = await response.json()
            created = datetime.fromisoformat(job["created_at"])
            started = datetime.fromisoformat(job["started_at"])
            waits.append((started - created).total_seconds() * 1000)
            await asyncio.sleep(0.2)  # idle again before the next one
    waits.sort()
    return {
        "jobs": jobs,
        "p50_ms": round(statistics.median(waits), 1),
        "p90_ms": round(waits[int(len(waits) * 0.9)], 1),
        "max_ms": round(waits[-1], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.wakeup", description=__doc__)
    parser.add_argument("--api", required=True, help="http://127.0.0.1:PORT")
    parser.add_argument("--target", required=True, help="http://127.0.0.1:PORT of bench.target")
    parser.add_argument("--jobs", type=int, default=30)
    parser.add_argument("--start", type=int, default=900_000, help="first page number")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.api, args.target, args.jobs, args.start))))


if __name__ == "__main__":
    main()
