"""The `retro` package against a stage-1 run (RETRO_TEST_TABLEBASE, made by
tests/pytest.rs): its answers against the run's summary.json, rank and
unrank against each other, moves against probing their children, errors as
Python exceptions."""

import json
import os
from collections import Counter
from pathlib import Path

import pytest

import retro

TB = Path(os.environ["RETRO_TEST_TABLEBASE"])


@pytest.fixture(scope="module")
def tb():
    return retro.open_tablebase(TB)


@pytest.fixture(scope="module")
def every_position(tb):
    return [tb.probe(tb.unrank(rank))["position"] for rank in range(tb.positions)]


def test_the_start_is_the_published_kingmaker(tb):
    assert tb.kind == "cc3"
    assert tb.positions == 1662
    assert tb.start == "e1/b4/b1 A"
    p = tb.probe("e1/b4/b1 A")["position"]
    assert p["category"] == "kingmaker"
    assert p["solo"] == {"A": "loss", "B": "loss", "C": "loss"}
    assert all(p["enable"].values()) and len(p["enable"]) == 6
    assert tb.probe() == tb.probe(tb.start)


def test_rank_and_unrank_are_inverse_over_the_whole_space(tb):
    for rank in range(tb.positions):
        assert tb.rank(tb.unrank(rank)) == rank


def test_every_move_shows_its_childs_answers(tb):
    probe = tb.probe()
    assert probe["moves"], "the start has moves"
    for m in probe["moves"]:
        assert tb.probe(m["child"]["position"])["position"] == m["child"]


def test_counts_over_every_position_match_the_runs_summary(tb, every_position):
    summary = json.loads((TB / "summary.json").read_text())["scopes"]["all"]
    legal = [p for p in every_position if p["outcome"] != "illegal"]
    assert len(every_position) - len(legal) == summary["illegal"]
    for player, want in summary["solo"].items():
        got = Counter(p["solo"][player] for p in legal)
        assert {k: got.get(k, 0) for k in want} == want, player
    for pair, want in summary["enable"].items():
        assert sum(p["enable"][pair] for p in legal) == want, pair
    got = Counter(p["category"] for p in legal)
    for category in ("solo_win", "kingmaker", "spoiler_draw", "other"):
        assert got.get(category, 0) == summary["categories"][category], category


def test_errors_are_python_exceptions_with_the_rust_message(tb, tmp_path):
    with pytest.raises(retro.ProbeError, match="no such directory"):
        retro.open_tablebase(tmp_path / "nothing-here")
    with pytest.raises(retro.ProbeError):
        tb.probe("not a position")
    with pytest.raises(retro.ProbeError, match="past the last position"):
        tb.unrank(tb.positions)
    assert issubclass(retro.ProbeError, ValueError)


def test_describe_is_the_plain_text_of_coordinator_probe(tb):
    text = tb.describe()
    assert "e1/b4/b1" in text and "kingmaker" in text
    assert repr(tb).startswith("<retro.Tablebase cc3 1662 positions")


def test_plies_to_the_end_follow_best_play(tb, every_position):
    """Each decided solo answer's plies (from the depth files) are one more
    than the best child's: the winner's mover takes the quickest child that
    keeps the win, the loser's the slowest; a finished position is 0."""
    checked = 0
    for p in every_position:
        if p["outcome"] == "illegal":
            continue
        probe = tb.probe(p["position"])
        for player, value in p["solo"].items():
            question = f"solo({player})"
            if value == "draw":
                assert question not in p["plies"], p["position"]
                continue
            plies = p["plies"][question]
            if p["outcome"] != "ongoing":
                assert plies == 0, p["position"]
                continue
            kids = [m["child"] for m in probe["moves"]]
            # The mover plays for the value when it is player's win and the
            # mover is player, or player's loss and the mover is another.
            hurries = (value == "win") == (p["to_move"] == player)
            if hurries:
                best = min(k["plies"][question] for k in kids if k["solo"][player] == value)
            else:
                best = max(k["plies"][question] for k in kids)
            assert plies == best + 1, (p["position"], question, plies, best)
            checked += 1
    assert checked > 1000, checked
