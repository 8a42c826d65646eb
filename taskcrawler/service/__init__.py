"""Application services: the operations the API and the command line share."""

from taskcrawler.service.submission import Submitter

__all__ = ["Submitter"]
