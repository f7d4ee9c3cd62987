"""What a trace says for the sampling rules (goldset.traces.signals, pure): thumbs-down
feedback, judges' evaluations (disagreement, confidence), near-duplicate questions by
normalised hash and character-trigram Jaccard similarity; and feedback spans are left out of
the mapping's roles (goldset.traces.mapping.is_annotation_span)."""

import pytest

from goldset.traces.decode import Scope, Span, SpanEvent
from goldset.traces.mapping import TraceRecord, is_annotation_span, map_trace
from goldset.traces.signals import QuestionIndex, jaccard, trace_signals, trigrams


def span(span_id="a" * 16, parent="", attributes=None, events=()):
    return Span(
        trace_id="1" * 32,
        span_id=span_id,
        parent_span_id=parent,
        name="s",
        kind="INTERNAL",
        start_ns=1,
        end_ns=2,
        attributes=attributes or {},
        events=tuple(events),
        resource={},
        scope=Scope("t", ""),
        status={},
        parent_is_remote=False,
    )


@pytest.mark.parametrize(
    ("value", "down"),
    [("thumbs_down", True), ("Thumbs-Down", True), ("👎", True), (-1, True), (0, True),
     ("thumbs_up", False), (1, False), (True, False), ("", False)],
)  # fmt: skip
def test_thumbs_down_values(value, down):
    assert trace_signals([span(attributes={"goldset.feedback": value})]).thumbs_down is down


def test_feedback_in_an_event_counts():
    event = SpanEvent("feedback", 3, {"user.feedback": "negative"})
    assert trace_signals([span(events=[event])]).thumbs_down


def test_judges_disagree_on_labels_or_on_either_side_of_half():
    def evaluation(**attributes):
        return SpanEvent("gen_ai.evaluation.result", 3, attributes)

    same = [evaluation(**{"gen_ai.evaluation.score.label": "pass"})] * 2
    assert not trace_signals([span(events=same)]).judges_disagree
    labels = [
        evaluation(**{"gen_ai.evaluation.score.label": "pass"}),
        evaluation(**{"gen_ai.evaluation.score.label": "fail"}),
    ]
    assert trace_signals([span(events=labels)]).judges_disagree
    scores = [
        evaluation(**{"gen_ai.evaluation.score.value": 0.8}),
        evaluation(**{"gen_ai.evaluation.score.value": 0.3}),
    ]
    assert trace_signals([span(events=scores)]).judges_disagree
    confident = [
        evaluation(**{"gen_ai.evaluation.score.value": 0.8, "goldset.judge.confidence": 0.9})
    ]
    signals = trace_signals([span(events=confident)])
    assert not signals.judges_disagree and signals.lowest_confidence() == 0.9


def test_jaccard_of_character_trigrams():
    a, b = trigrams("abcd"), trigrams("abce")
    # " abcd " → { ab, abc, bcd, cd }; " abce " → { ab, abc, bce, ce }
    assert (len(a), len(b), jaccard(a, b)) == (4, 4, pytest.approx(2 / 6))


def test_question_index_finds_the_same_normalised_text_and_near_duplicates():
    index = QuestionIndex(["How are system accounts reviewed?", "Who rotates passwords?"])
    assert index.nearest("  how ARE system   accounts reviewed? ") == 1.0
    near = index.nearest("How are the system accounts reviewed?")
    assert 0.7 < near < 1.0
    assert index.nearest("Which encryption protects backups at rest?") < 0.3
    assert QuestionIndex([]).nearest("anything") == 0.0
    assert index.has_near_duplicate("Who rotates the passwords?", threshold=0.7)


def test_a_late_feedback_span_neither_adds_a_root_nor_waits_for_a_parent():
    root = span(attributes={"input.value": "Q?", "output.value": "A."})
    feedback = span(span_id="b" * 16, parent="f" * 16, attributes={"goldset.feedback": "down"})
    assert is_annotation_span(feedback) and not is_annotation_span(root)
    assert isinstance(map_trace([root, feedback]), TraceRecord)
    assert map_trace([feedback]).reason == "only feedback or evaluation spans so far"
