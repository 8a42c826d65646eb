"""Pure extraction: HTML bytes in, what the page says about itself out. No I/O."""

from taskcrawler.domain.pages import Link
from taskcrawler.extract.page import FORMATS, Extraction, extract

__all__ = ["FORMATS", "Extraction", "Link", "extract"]
