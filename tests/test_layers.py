"""The code guards its own shape: no module reaches into the knowledge base's private parts.

The layers themselves (each module imports only its own layer or those below) are import-linter's
contract in pyproject.toml, checked by ``make check``; what an import contract cannot see is a call of
a private method on a knowledge base handed in as an argument, which this test finds.
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "kgrdf"


def _private_members() -> set[str]:
    tree = ast.parse((PACKAGE / "kb.py").read_text(encoding="utf-8"))
    (cls,) = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "KnowledgeBase"]
    names = set()
    for node in cls.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    module = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    return {n for n in names | module if n.startswith("_") and not n.startswith("__")}


def _reaches(source: str, private: set[str]) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in private:
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module == "kgrdf.kb":
            found += [f"line {node.lineno}: import {a.name}" for a in node.names if a.name in private]
    return found


def test_no_module_reaches_into_the_knowledge_base_private_parts():
    private = _private_members()
    assert "_open_for_writing" in private and "_rebuild" in private  # the check sees what it guards
    offences = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "kb.py" and path.parent == PACKAGE:
            continue
        found = _reaches(path.read_text(encoding="utf-8"), private)
        if found:
            offences[str(path.relative_to(PACKAGE.parent))] = found
    assert not offences, offences


def test_the_check_finds_a_private_call_and_a_private_import():
    private = {"_open_backend", "_schema_digest_quads"}
    source = "from kgrdf.kb import _schema_digest_quads\n\ndef f(kb):\n    return kb._open_backend(True)\n"
    assert _reaches(source, private) == ["line 1: import _schema_digest_quads", "line 4: ._open_backend"]
    assert _reaches("def f(self):\n    return self._open_backend(True)\n", private) == []
