"""The README's tour runs as written.

The convention, which the README states where the tour begins:

- every ```console block of README.md is run, in the order of the file, in one bash shell (so an
  ``export``, a variable or a function of one block holds in the next); no other block is run
  (a ```text block shows something without being run);
- a line starting with ``$ `` is a command; a command line ending in ``\\`` goes on to the next
  line; every other line of the block is output shown for the command above it;
- a command is expected to exit 0, unless its comment begins ``# exit N``: then it must exit N;
- the output shown is abridged: each line shown must be a line of what the command printed
  (stdout and stderr), in that order; ``…`` stands for any text, and a fact id (``f-`` and six
  characters) for any fact id, since a fact's id is minted by each knowledge base.

The shell starts in a new, empty folder holding a copy of ``examples/``, with the ``kg`` of the
Python running the tests first on PATH (the tour's setup, ``make demo``, made it so), HOME in that
folder and no ``KGRDF_*`` setting of the caller's, so the tour's commands meet exactly what they
would on a fresh checkout.
"""

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FACT_ID = re.compile(r"\bf-[a-z2-7]{6}\b")  # as minted: base32 of a digest
SHOWN_ID = re.compile(r"\bf-[a-z0-9]{6}\b")  # as the README shows one
EXIT = re.compile(r"(?:^|\s)#\s*exit (\d+)\b")
FENCE = re.compile(r"^```(\S*)\s*$")


@dataclass
class Command:
    text: str  # as pasted: continuation lines kept with their backslash-newline
    line: int  # where it starts in README.md
    expect: int = 0
    output: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"README.md line {self.line}: $ {self.text}"


def tour(markdown: str) -> list[Command]:
    """The commands of every ```console block, in order, with their expected exit code and output.

    Raises ValueError for a block left open, or output shown before any command of its block.
    """
    commands: list[Command] = []
    language = None  # the language of the open fence, or None outside a block
    block: list[Command] = []
    continued = False
    for number, line in enumerate(markdown.splitlines(), start=1):
        fence = FENCE.match(line)
        if fence and language is None:
            language, block, continued = fence.group(1), [], False
            continue
        if fence:
            if continued:
                raise ValueError(f"README.md line {number}: the block ends inside a command")
            language = None
            commands += block
            continue
        if language != "console":
            continue
        if continued:
            block[-1].text += "\n" + line
        elif line.startswith("$ "):
            block.append(Command(line[2:], number))
        elif line.strip():
            if not block:
                raise ValueError(f"README.md line {number}: output before any command of its block")
            block[-1].output.append(line.rstrip())
            continue
        else:
            continue
        continued = line.endswith("\\")
        if not continued:
            marker = EXIT.search(block[-1].text.splitlines()[-1])
            block[-1].expect = int(marker.group(1)) if marker else 0
    if language is not None:
        raise ValueError(f"README.md ends inside a ```{language} block")
    return commands


def shown_line(shown: str) -> re.Pattern:
    """A line of output as shown in the README, as a pattern for a line the command printed: each
    fact id shown is a group that matches any fact id."""
    pieces = []
    for part in shown.split("…"):
        at = 0
        for found in SHOWN_ID.finditer(part):
            pieces.append(re.escape(part[at : found.start()]) + f"({FACT_ID.pattern})")
            at = found.end()
        pieces.append(re.escape(part[at:]))
    return re.compile(".*".join(pieces))


def missing_output(shown: list[str], printed: str, ids: dict[str, str] | None = None) -> str | None:
    """The first line shown that the output does not hold (after the ones matched before it).

    ``ids`` maps each fact id shown in the README to the one printed in its place, across the whole
    tour: one id shown stands for one fact, so a line that names another fact does not match.
    """
    ids = {} if ids is None else ids
    lines = [line.rstrip() for line in printed.splitlines()]
    at = 0
    for expected in shown:
        pattern, names = (
            shown_line(expected),
            SHOWN_ID.findall(expected.replace("…", " ")),
        )
        while at < len(lines):
            found = pattern.fullmatch(lines[at])
            at += 1
            if found and _bind(ids, names, found.groups()):
                break
        else:
            return expected
    return None


def _bind(ids: dict[str, str], names: list[str], printed: tuple[str, ...]) -> bool:
    """Bind the ids shown to the ids printed, when that agrees with the bindings so far."""
    trial = dict(ids)
    for name, value in zip(names, printed, strict=True):
        if trial.setdefault(name, value) != value:
            return False
    if len(set(trial.values())) != len(trial):  # two ids shown for one fact
        return False
    ids.update(trial)
    return True


def script(commands: list[Command], out: str) -> str:
    """One bash script running every command in this shell, each one's output and exit code kept
    in ``out``; it stops after the first command that exits otherwise than expected."""
    parts = []
    for i, command in enumerate(commands):
        # The command runs in a group, not a subshell, so that what it exports or defines holds for
        # the next; the closing brace goes on its own line, after any comment the command ends with.
        parts.append(
            f'{{ {command.text}\n}} >"{out}/{i}.out" 2>&1 </dev/null\n'
            f'status=$?; echo $status >"{out}/{i}.rc"; [ $status -eq {command.expect} ] || exit 0\n'
        )
    return "".join(parts)


def run_tour(commands: list[Command], folder: Path) -> tuple[list[tuple[Command, int, str]], str]:
    """Run the tour in ``folder``: each command run, with its exit code and output, in order, and
    what the shell itself printed (a command it could not parse stops it there)."""
    work, out = folder / "work", folder / "out"
    work.mkdir()
    out.mkdir()
    (folder / "home").mkdir()
    shutil.copytree(ROOT / "examples", work / "examples")
    env = {name: value for name, value in os.environ.items() if not name.startswith("KGRDF_")}
    env.update(
        HOME=str(folder / "home"),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
    )
    (folder / "tour.sh").write_text(script(commands, str(out)), encoding="utf-8")
    shell = subprocess.run(
        ["bash", "--noprofile", "--norc", str(folder / "tour.sh")],
        check=False,  # each command's exit code is in its .rc file; the shell's own is not the tour's
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    ran = []
    for i, command in enumerate(commands):
        if not (out / f"{i}.rc").exists():
            break
        ran.append(
            (
                command,
                int((out / f"{i}.rc").read_text()),
                (out / f"{i}.out").read_text(encoding="utf-8", errors="replace"),
            )
        )
    return ran, shell.stdout + shell.stderr


TOUR = tour(README.read_text(encoding="utf-8"))


def test_the_readme_has_a_tour_to_run():
    assert len(TOUR) > 50, "README.md has lost its ```console blocks"
    assert {"kg init", "kg demo"} <= {re.split(r"\s#", command.text)[0].strip() for command in TOUR}


def test_every_block_of_the_readme_says_whether_it_runs():
    """A block is console (run) or text (shown); a ```sh block would look runnable and not be run."""
    languages = [
        FENCE.match(line).group(1) for line in README.read_text(encoding="utf-8").splitlines() if FENCE.match(line)
    ]
    assert set(languages[0::2]) <= {"console", "text"}, languages[0::2]


def test_every_example_file_the_readme_names_is_shipped_and_used():
    text = README.read_text(encoding="utf-8")
    named = set(re.findall(r"(?<![\w/])examples/[\w.-]+", text))
    assert named and all((ROOT / name).is_file() for name in named), sorted(named)
    commands = "\n".join(command.text for command in TOUR)
    assert {name for name in named if name in commands} == named, "a file is named but no command reads it"
    shipped = {f"examples/{path.name}" for path in (ROOT / "examples").iterdir()}
    assert shipped == named, f"examples/ holds files the README never names: {sorted(shipped - named)}"


@pytest.mark.slow
def test_the_tour_runs_as_written_and_prints_what_it_shows(tmp_path):
    (ran, shell), ids = run_tour(TOUR, tmp_path), {}
    for command, status, output in ran:
        assert status == command.expect, f"{command}\nexited {status}, expected {command.expect}; it printed:\n{output}"
        missing = missing_output(command.output, output, ids)
        assert missing is None, f"{command}\ndid not print the line {missing!r}; it printed:\n{output}"
    assert len(ran) == len(TOUR), f"the tour stopped before {TOUR[len(ran)]}\n{shell}"


def test_the_demo_asks_as_many_questions_as_the_readme_says(tmp_path):
    words = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
    said = re.search(r"make demo .*asks it (\w+) questions", README.read_text(encoding="utf-8"))
    assert said and said.group(1) in words, "the README no longer says how many questions the demo asks"
    shown = subprocess.run(
        [str(Path(sys.executable).parent / "kg"), "demo", "--kb", str(tmp_path / "kb")],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    asked = [line for line in shown.stdout.splitlines() if line.startswith("$ kg ")]
    assert len(asked) == words[said.group(1)], asked


# The conventions themselves, on literal blocks, so a mistake in reading the README cannot pass
# for a tour that runs.
SAMPLE = """\
Prose.

```text
$ kg never-run
```

```console
$ export A=1                 # a setting
$ kg propose x y \\
    --object z               # exit 1: refused
kg: subject 'x' is not known …
$ kg lookup webapp
web-app  repo/web-app (repo)
  f-3k9x2a [confirmed] Sam Reyes reviews web-app
```
"""


def test_the_convention_reads_commands_continuations_exit_codes_and_output():
    commands = tour(SAMPLE)
    assert [(c.text, c.expect, c.output) for c in commands] == [
        ("export A=1                 # a setting", 0, []),
        (
            "kg propose x y \\\n    --object z               # exit 1: refused",
            1,
            ["kg: subject 'x' is not known …"],
        ),
        (
            "kg lookup webapp",
            0,
            [
                "web-app  repo/web-app (repo)",
                "  f-3k9x2a [confirmed] Sam Reyes reviews web-app",
            ],
        ),
    ]
    assert commands[1].line == 9


@pytest.mark.parametrize(
    "bad",
    [
        "```console\n$ kg init\n",
        "```console\nMade a knowledge base\n```\n",
        "```console\n$ kg init \\\n```\n",
    ],
)
def test_a_tour_that_cannot_be_read_is_an_error(bad):
    with pytest.raises(ValueError):
        tour(bad)


def test_output_shown_matches_in_order_with_any_text_and_any_fact_id():
    printed = "web-app  repo/web-app (repo)\n  also: webapp\n  f-6qo2lr [confirmed] Sam Reyes reviews web-app\n"
    assert (
        missing_output(
            [
                "web-app  repo/web-app (repo)",
                "  f-3k9x2a [confirmed] … reviews web-app",
            ],
            printed,
        )
        is None
    )
    assert missing_output(["  f-3k9x2a [proposed] Sam Reyes reviews web-app"], printed) is not None
    assert missing_output(["  also: webapp", "web-app  repo/web-app (repo)"], printed) == "web-app  repo/web-app (repo)"
    assert missing_output(["also: webapp"], printed) is not None  # a whole line, not a part of one
    assert missing_output(["web-app  repo/web-app (repo)."], printed) is not None  # no pattern in the text


def test_one_fact_id_shown_stands_for_one_fact_across_the_tour():
    ids = {}
    assert (
        missing_output(
            ["created f-3k9x2a [proposed] Sam Reyes reviews web-app"],
            "created f-6qo2lr [proposed] Sam Reyes reviews web-app\n",
            ids,
        )
        is None
    )
    assert ids == {"f-3k9x2a": "f-6qo2lr"}
    printed = "f-aaaaaa closed, replaced by f-bbbbbb\nf-6qo2lr closed, replaced by f-bbbbbb\n"
    assert missing_output(["f-3k9x2a closed, replaced by f-9mt3xq"], printed, ids) is None  # the second line
    assert ids == {"f-3k9x2a": "f-6qo2lr", "f-9mt3xq": "f-bbbbbb"}
    assert missing_output(["f-7pq2mm closed"], "f-6qo2lr closed\n", ids) is not None  # f-6qo2lr is f-3k9x2a
    assert missing_output(["f-3k9x2a closed"], "f-cccccc closed\n", ids) is not None


def test_the_tour_stops_at_the_first_command_that_exits_otherwise(tmp_path):
    commands = tour("```console\n$ echo one\n$ false                # exit 1\n$ false\n$ echo never\n```\n")
    ran, _ = run_tour(commands, tmp_path)
    assert [(c.text.split()[0], status, output) for c, status, output in ran] == [
        ("echo", 0, "one\n"),
        ("false", 1, ""),
        ("false", 1, ""),
    ]


def test_what_one_command_sets_holds_for_the_next_and_a_command_bash_cannot_parse_stops_the_tour(
    tmp_path,
):
    commands = tour(
        '```console\n$ export A=1; f() { echo "f$A"; }\n$ B=$(f)\n$ echo "$B" \\\n  two\n$ echo (\n$ echo never\n```\n'
    )
    ran, shell = run_tour(commands, tmp_path)
    assert [(status, output) for _, status, output in ran] == [
        (0, ""),
        (0, ""),
        (0, "f1 two\n"),
    ]
    assert "syntax error" in shell
