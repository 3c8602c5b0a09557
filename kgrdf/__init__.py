"""kgrdf: an organizational knowledge graph for AI agents, on RDF.

The library's entry point is :class:`kgrdf.kb.KnowledgeBase`; the ``kg`` command is a thin shell
over it. Nothing here is imported eagerly, so that a read command starts fast.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
