"""The ``taskcrawler`` command line."""
