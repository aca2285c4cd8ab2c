"""The left outer join's judge (harness/checker/joins.py judge_outer), proven with injected anomalies: rows made
right from what was sent are exact; a padded row of an answered record, a joined row of an unanswered one and a
joined row naming another answer are found, each exactly, and nothing else is."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from harness.checker.joins import judge_outer


@st.composite
def sent(draw):
    """Records due a row (rids), the answered ones among them (sorted, with the answer each has), and the rows a
    right join writes: one per record, joined (naming its answer) or padded."""
    due = np.array(sorted(draw(st.sets(st.integers(0, 10_000), min_size=2, max_size=60))), np.int64)
    answered_mask = np.array(draw(st.lists(st.booleans(), min_size=len(due), max_size=len(due))), bool)
    answered_mask[0], answered_mask[1] = True, False  # one of each kind
    answered = due[answered_mask]
    answers = np.array([f"p-{r}" for r in answered], object)
    named = np.array([f"p-{r}" if a else None for r, a in zip(due, answered_mask)], object)
    return due, answered, answers, due.copy(), ~answered_mask, named


def _judge(due, answered, answers, rows, padded, named, judged=True):
    return judge_outer(answered, due, rows, padded, judged, (named, answers))


@given(sent())
def test_rows_made_from_what_was_sent_are_exact(case):
    due, answered, answers, rows, padded, named = case
    found = _judge(due, answered, answers, rows, padded, named)
    assert (
        (found.joined, found.padded)
        == (found.joined_due, found.padded_due)
        == (len(answered), len(due) - len(answered))
    )
    assert len(found.answers_lost) == len(found.phantom_joins) == 0 and found.verdict == "exactly-once"


@given(sent(), st.data())
def test_a_padded_row_of_an_answered_record_is_its_answer_lost(case, data):
    due, answered, answers, rows, padded, named = case
    hit = data.draw(st.sets(st.sampled_from(list(np.flatnonzero(~padded))), min_size=1))
    padded, named = padded.copy(), named.copy()
    padded[list(hit)], named[list(hit)] = True, None
    found = _judge(due, answered, answers, rows, padded, named)
    assert set(found.answers_lost.tolist()) == {int(rows[i]) for i in hit} and len(found.phantom_joins) == 0
    assert found.verdict == "at-most-once"


@given(sent(), st.data())
def test_a_joined_row_of_an_unanswered_record_or_naming_another_answer_is_a_phantom_join(case, data):
    due, answered, answers, rows, padded, named = case
    unanswered = data.draw(st.sets(st.sampled_from(list(np.flatnonzero(padded))), min_size=1))
    other = data.draw(st.sets(st.sampled_from(list(np.flatnonzero(~padded))), max_size=3))
    padded, named = padded.copy(), named.copy()
    padded[list(unanswered)] = False
    named[list(unanswered)] = "p-none"
    named[list(other)] = "p-someone-else"
    found = _judge(due, answered, answers, rows, padded, named)
    assert set(found.phantom_joins.tolist()) == {int(rows[i]) for i in unanswered | other}
    assert len(found.answers_lost) == 0 and found.verdict == "none"


@given(sent(), st.data())
def test_copies_and_missing_rows_are_left_to_the_records_judgement(case, data):
    """Two copies of a row are a duplicate and a row missing a loss, as the outputs' records count them: neither is
    a row of the wrong kind."""
    due, answered, answers, rows, padded, named = case
    keep = np.array(data.draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows))), bool)
    twice = np.concatenate([np.flatnonzero(keep), np.flatnonzero(keep)])
    found = _judge(due, answered, answers, rows[twice], padded[twice], named[twice])
    assert len(found.answers_lost) == len(found.phantom_joins) == 0
    assert found.joined + found.padded == int(keep.sum())


def test_padded_rows_not_all_due_are_not_judged_but_wrong_rows_still_are():
    due, answered = np.array([1, 2, 3]), np.array([1])
    found = judge_outer(answered, due, np.array([1, 2]), np.array([True, False]), False)
    assert found.padded_due is None and found.answers_lost.tolist() == [1] and found.phantom_joins.tolist() == [2]
