"""Query parameters several routes share, declared once so that their bounds agree."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

#: How many rows of a job's own records a route returns (its last runs, its last deliveries, a
#: page of links): bounded, so that one request reads a bounded number of rows.
RowLimit = Annotated[int, Query(ge=1, le=1000, description="How many at most (1 to 1,000).")]
#: How many items a page of a listing holds (jobs, crawls, monitors and their changes).
PageLimit = Annotated[int, Query(ge=1, le=500, description="Items per page (1 to 500).")]
