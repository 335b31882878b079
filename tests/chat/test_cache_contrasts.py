"""The similarity scope of the answer cache serves rewordings, never another question: a contrast set of
questions an embedding puts side by side (primary/secondary, before/after, KR-1042/KR-1043, negations) never
shares an entry, at the default threshold and with the threshold so low that only the guard stands between them.
The set is benchmarks/chat/security/cache_contrasts.json, which the security bench measures too."""

import pytest

from benchmarks.chat.security.cache_contrast import cache_shares, contrast_set

pytestmark = pytest.mark.django_db

CONTRASTS, PARAPHRASES = contrast_set()


def _cited(corpus) -> list[dict]:
    chunk = corpus.acme_public.chunks.order_by("ordinal").first()
    return [{"document_id": corpus.acme_public.pk, "chunk_id": chunk.pk, "label": "S1"}]


@pytest.mark.parametrize("threshold", [None, 0.2])
def test_contrasting_questions_never_share_an_answer(world, corpus, settings, threshold):
    if threshold is not None:
        settings.ANSWER_CACHE_SIMILARITY = threshold
    member, citations = world.authority(world.member), _cited(corpus)
    assert len(CONTRASTS) >= 20
    wrong = [(a, b) for a, b in CONTRASTS for stored, asked in ((a, b), (b, a))
             if cache_shares(member, citations, stored, asked)]
    assert wrong == []


@pytest.mark.parametrize("threshold", [None, 0.2])
def test_rewordings_still_share_an_answer(world, corpus, settings, threshold):
    if threshold is not None:
        settings.ANSWER_CACHE_SIMILARITY = threshold
    member, citations = world.authority(world.member), _cited(corpus)
    missed = [(a, b) for a, b in PARAPHRASES if not cache_shares(member, citations, a, b)]
    assert missed == []


def test_signature_keeps_what_changes_the_answer():
    from chat.cache import question_signature

    assert question_signature("Who is the head of support?") != question_signature("Who was the head of support?")
    assert question_signature("Is the VPN required?") != question_signature("Isn't the VPN required?")
    assert question_signature("Status of KR-1042?") != question_signature("Status of KR-1043?")
    assert question_signature("How long do laptop replacements take?") == question_signature(
        "how long does a laptop replacement take, please")
