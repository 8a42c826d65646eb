"""One worker host against two: ``sudo python -m bench.multihost [--jobs 600] [--delay 1]``.

The deployment of tests/multihost (tests/support/multihost.py): PostgreSQL and Redis, the API,
two worker hosts and a site of 20 hosts, each in a network namespace of its own, one
``taskcrawler worker`` per worker host. The site answers each page after ``--delay`` seconds, so
the work is bound by waiting, as on the internet, not by this machine's cores.

Phase one: ``--jobs`` pages over the site's 20 hosts with one worker host. Phase two: the second
worker host joins, and as many other pages are drained by both. Each phase is timed from the
submission to the last job final; the figure that matters is the ratio of the two rates. Settings
are the defaults (8 requests at once per site host) unless ``--set KEY=VALUE`` says otherwise.
Needs root (network namespaces).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.support import netns
from tests.support.multihost import SITE_HOSTS, MultiHost, deployed, make_lab


async def drain(deployment: MultiHost, phase: str, jobs: int, delay: float) -> dict[str, Any]:
    await deployment.reset_site()
    urls = [f"{deployment.site[n % SITE_HOSTS]}/p/{phase}-{n}?delay={delay:g}" for n in range(jobs)]
    started = time.monotonic()
    await deployment.submit(urls)
    counts = await deployment.wait_final(f"%/p/{phase}-%", jobs, within=max(600.0, jobs * delay))
    seconds = time.monotonic() - started
    fetches: dict[str, list[str]] = (await deployment.site_stats())["fetches"]
    by_host = {
        host: sum(clients[-1] == deployment.address(host) for clients in fetches.values())
        for host in deployment.workers
    }
    return {
        "phase": phase,
        "jobs": jobs,
        "seconds": round(seconds, 2),
        "jobs_per_second": round(jobs / seconds, 1),
        "completed": counts["COMPLETED"],
        "fetched_twice": sum(len(clients) > 1 for clients in fetches.values()),
        "by_worker_host": by_host,
    }


async def main_async(args: argparse.Namespace, workdir: Path) -> list[dict[str, Any]]:
    lab = make_lab(["w1", "w2"])
    try:
        async with deployed(lab, workdir, ["w1"], **args.settings) as deployment:
            one = await drain(deployment, "one", args.jobs, args.delay)
            print(json.dumps(one), flush=True)
            await deployment.start_worker("w2")
            two = await drain(deployment, "two", args.jobs, args.delay)
            print(json.dumps(two), flush=True)
    finally:
        lab.close()
    print(f"two worker hosts / one: {two['jobs_per_second'] / one['jobs_per_second']:.2f}")
    return [one, two]


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.multihost",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--jobs", type=int, default=600)
    parser.add_argument("--delay", type=float, default=1.0, help="seconds each page takes")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    if (why := netns.unavailable()) is not None:
        parser.error(why)
    args.settings = dict(item.split("=", 1) for item in args.set)
    workdir = Path(tempfile.mkdtemp(prefix="tc_multihost_"))
    try:
        results = asyncio.run(main_async(args, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
