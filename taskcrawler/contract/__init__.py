"""The HTTP API's request and response bodies (v1), one module per resource: what requests
may say, and every answer's shape. The API validates and renders with them, the client reads its
answers with them, the MCP tools and the command line build their requests with them.

No web framework here: importing a model costs pydantic and the domain, nothing of the server.
The first version's field names (``id``, ``url``, ``status``, …) are kept exactly: clients rely
on them, and the models' class names are the OpenAPI schemas' names.
"""
