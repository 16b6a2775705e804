"""The README's command table: every command `regress --help` lists, in its order, in one table."""

from __future__ import annotations

import re
from pathlib import Path

from regress.cli.main import build_parser

README = Path(__file__).resolve().parents[2] / "README.md"


def _commands() -> list[str]:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return list(sub.choices)


def test_one_table_lists_every_command_in_help_order():
    text = README.read_text()
    assert text.count("| command | does |") == 1  # one table, not one per section
    table = text[text.index("| command | does |") :].split("\n\n", 1)[0]
    rows = [re.match(r"\| `regress (\w+)", line) for line in table.splitlines()[2:]]
    assert all(rows), table
    assert [m.group(1) for m in rows] == _commands()


def test_the_verdict_sentence_says_the_documented_rule():
    text = re.sub(r"\s+", " ", README.read_text())
    assert "a move as large as the threshold" not in text  # compare calls +4.2% a regression at 5%
    assert "reaches the threshold" in text and "at least half the threshold" in text
