"""kg serve and kg mcp: the knowledge base for programs, over HTTP and over stdio (SPEC §9b).

A thin face over the library, as the CLI is: :mod:`kgrdf.serve.service` turns each call into the
library's own (the document it returns is the one ``kg ... --json`` prints), with the perspective,
the audience and the right to write of the caller fixed by its token (:mod:`kgrdf.tokens`) or by
the command line of ``kg mcp``, never by anything the caller sends. :mod:`kgrdf.serve.http` serves
it as a SPARQL 1.1 Protocol endpoint (``/sparql``), a JSON API (``/api``) and MCP over streamable
HTTP (``/mcp``); :mod:`kgrdf.serve.tools` names and describes the MCP tools.
"""
