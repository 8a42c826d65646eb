"""The harness of the tests and of the benchmarks: real PostgreSQL and Redis found or started
(``services``), a database or key prefix of one's own, a local HTTP target (``target``), hostile
servers (``hostile``), and managed ``taskcrawler`` subprocesses (``processes``).

It lives beside the tests because they are its main user and its own tests are among them
(tests/integration/test_support_services.py); bench/ imports it as ``tests.support``, as the
tests do, so both run from the repository root and nothing is written twice. The fixtures that
hand it to each test are in tests/conftest.py.
"""
