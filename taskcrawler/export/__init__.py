"""Export formats, pure: finished jobs in, bytes out (JSONL lines, gzipped WARC 1.1 records),
and the opaque cursor that resumes an export."""

from taskcrawler.export.cursor import decode_cursor, encode_cursor
from taskcrawler.export.jsonl import jsonl_record
from taskcrawler.export.warc import WarcWriter

__all__ = ["WarcWriter", "decode_cursor", "encode_cursor", "jsonl_record"]
