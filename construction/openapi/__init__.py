"""OpenAPI services as tool sources: one tool per operation of an OpenAPI 3.0/3.1 document, its
calls sent for real (docs/construction/openapi.md).

>>> from benchsmith.construction.openapi import tools_from_openapi
>>> doc = {"openapi": "3.1.0", "info": {"title": "pets", "version": "1"}, "paths": {"/pets/{id}": {"get": {
...     "operationId": "get_pet", "summary": "One pet.",
...     "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}],
...     "responses": {"200": {"description": "the pet"}}}}}}
>>> tools, service = tools_from_openapi(doc, name="pets", base_url="http://127.0.0.1:8000")
>>> tools[0].name, tools[0].parameters.required, tools[0].hints.read_only, service.operations[0].path
('get_pet', ['id'], True, '/pets/{id}')
"""

from ._private.catalog import (
    ENVIRONMENT_FILE,
    SERVICE_FILE,
    TOOLS_FILE,
    check_openapi_document,
    import_openapi_tools,
    is_loopback,
    read_openapi_document,
)
from ._private.convert import HttpRequest, add_auth, env_name, observation_of_response, request_of, tools_from_openapi
from ._private.environment import OpenApiToolEnvironment, open_openapi_environment
from ._private.session import OpenApiSession

__all__ = [
    "ENVIRONMENT_FILE",
    "HttpRequest",
    "OpenApiSession",
    "OpenApiToolEnvironment",
    "SERVICE_FILE",
    "TOOLS_FILE",
    "add_auth",
    "check_openapi_document",
    "env_name",
    "import_openapi_tools",
    "is_loopback",
    "observation_of_response",
    "open_openapi_environment",
    "read_openapi_document",
    "request_of",
    "tools_from_openapi",
]
