"""Pure extraction: HTML bytes in, what the page says about itself out. No I/O."""

from taskcrawler.extract.page import Extraction, extract

__all__ = ["Extraction", "extract"]
