"""Every command teaches: help text on it and on each option, and a place in the README."""

import subprocess
import sys
from pathlib import Path

import pytest
import typer

from kgrdf.cli import app

COMMANDS = sorted(
    [info.name or info.callback.__name__.replace("_", "-") for info in app.registered_commands]
    + [group.name for group in app.registered_groups]
)
README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def test_the_command_list_is_what_the_issue_names():
    assert set(COMMANDS) >= {
        "init",
        "add-entity",
        "identify",
        "propose",
        "confirm",
        "reject",
        "supersede",
        "lookup",
        "facts",
        "search",
        "neighbors",
        "sparql",
        "history",
        "export",
        "stats",
        "demo",
        "validate",
        "schema",
    }


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_and_option_has_help(name):
    command = typer.main.get_command(app).commands[name]
    assert command.help and len(command.help) > 20, f"kg {name} has no help text"
    for param in command.params:
        if param.param_type_name == "option":
            assert param.help, f"kg {name} {param.opts[0]} has no help text"


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_is_in_the_readme(name):
    assert f"kg {name}" in README, f"README.md does not show kg {name}"


def test_python_dash_m_runs_the_cli():
    result = subprocess.run([sys.executable, "-m", "kgrdf", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "lookup" in result.stdout


def test_bad_usage_exits_2_without_a_traceback():
    result = subprocess.run([sys.executable, "-m", "kgrdf", "propose"], capture_output=True, text=True)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["lookup", "hotfix"],
        ["facts", "hotfix"],
        ["neighbors", "release", "--hops", "2"],
        ["search", "deploy"],
        ["context", "--for", "release"],
        ["lint"],
        ["stats"],
        ["identifiers", "list"],
    ],
    ids=lambda c: c[0],
)
def test_a_read_does_not_import_rdflib_pyshacl_or_owlrl(demo_template, command):
    code = (
        f"import sys; from kgrdf.cli import main; sys.argv = ['kg', *{command!r}, '--kb', {str(demo_template)!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('rdflib', 'pyshacl', 'owlrl') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout + result.stderr
